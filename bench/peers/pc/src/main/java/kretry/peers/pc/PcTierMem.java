package kretry.peers.pc;

/** Entry point of the tier_mem scenario: retries held in the JVM (see PcSide). */
public final class PcTierMem {
    public static void main(String[] a) throws Exception {
        PcSide.run("tier_mem");
    }
}
