package kretry.peers.pc;

/** Entry point of the parallel scenario (see PcSide). */
public final class PcParallel {
    public static void main(String[] a) throws Exception {
        PcSide.run("parallel");
    }
}
