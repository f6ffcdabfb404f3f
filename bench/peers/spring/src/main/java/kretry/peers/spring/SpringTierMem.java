package kretry.peers.spring;

/** Entry point of the tier_mem scenario (see SpringSide). */
public final class SpringTierMem {
    public static void main(String[] a) throws Exception {
        SpringSide.run("tier_mem");
    }
}
