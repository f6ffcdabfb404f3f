package kretry.peers.pc;

/** Entry point of the dead_letter scenario (see PcSide). */
public final class PcDeadLetter {
    public static void main(String[] a) throws Exception {
        PcSide.run("dead_letter");
    }
}
