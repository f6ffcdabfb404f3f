package kretry.peers.pc;

/** Entry point of the kill scenario (see PcSide). */
public final class PcKill {
    public static void main(String[] a) throws Exception {
        PcSide.run("kill");
    }
}
