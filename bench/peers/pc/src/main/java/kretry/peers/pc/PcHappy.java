package kretry.peers.pc;

/** Entry point of the happy scenario, with -Dbench.fail_pct failures (see PcSide). */
public final class PcHappy {
    public static void main(String[] a) throws Exception {
        PcSide.run("happy");
    }
}
