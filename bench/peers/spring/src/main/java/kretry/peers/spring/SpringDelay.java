package kretry.peers.spring;

/** Entry point of the delay scenario (see SpringSide). */
public final class SpringDelay {
    public static void main(String[] a) throws Exception {
        SpringSide.run("delay");
    }
}
