package kretry.peers.spring;

/** Entry point of the retry_hop scenario (see SpringSide). */
public final class SpringRetryHop {
    public static void main(String[] a) throws Exception {
        SpringSide.run("retry_hop");
    }
}
