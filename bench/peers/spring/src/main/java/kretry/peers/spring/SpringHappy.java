package kretry.peers.spring;

/** Entry point of the happy scenario, with -Dbench.fail_pct failures (see SpringSide). */
public final class SpringHappy {
    public static void main(String[] a) throws Exception {
        SpringSide.run("happy");
    }
}
