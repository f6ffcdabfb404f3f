package kretry.peers.spring;

/** Entry point of the parallel scenario (see SpringSide). */
public final class SpringParallel {
    public static void main(String[] a) throws Exception {
        SpringSide.run("parallel");
    }
}
