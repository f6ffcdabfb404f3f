package kretry.peers.pc;

/** Entry point of the delay scenario: lateness of retries in place (see PcSide). */
public final class PcDelay {
    public static void main(String[] a) throws Exception {
        PcSide.run("delay");
    }
}
