package kretry.peers.spring;

/** Entry point of the dead_letter scenario (see SpringSide). */
public final class SpringDeadLetter {
    public static void main(String[] a) throws Exception {
        SpringSide.run("dead_letter");
    }
}
