package kretry.peers.spring;

/** Entry point of the kill scenario (see SpringSide). */
public final class SpringKill {
    public static void main(String[] a) throws Exception {
        SpringSide.run("kill");
    }
}
