package kretry.peers;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What every peer side shares with kretry_bench: the work function of the
 * parallel shape (bench/bench.h bench_work_us), the measured window (first
 * message seen to the last one completed, with the process's CPU time over
 * it), peak RSS, the load and one JSON line of results on stdout.
 * Parameters come as system properties (-Dbench.x=...), set by
 * bench/peers/run_peers.py.
 */
public final class Bench {
    private Bench() {}

    public static String prop(String name) {
        String v = System.getProperty("bench." + name);
        if (v == null)
            throw new IllegalArgumentException("missing -Dbench." + name);
        return v;
    }

    public static String prop(String name, String def) {
        return System.getProperty("bench." + name, def);
    }

    public static long longProp(String name, long def) {
        return Long.parseLong(prop(name, Long.toString(def)));
    }

    /** bench_work_us() of bench/bench.h: splitmix64 of the offset, 0..5,000 us. */
    public static long workUs(long offset) {
        long h = offset * 0x9e3779b97f4a7c15L;
        h ^= h >>> 30;
        h *= 0xbf58476d1ce4e5b9L;
        h ^= h >>> 27;
        h *= 0x94d049bb133111ebL;
        h ^= h >>> 31;
        return Long.remainderUnsigned(h, 5001);
    }

    /**
     * The happy path with failures: does the first attempt of the message at
     * partition and offset fail? pct percent of them, chosen as kretry_bench's
     * bench_hop_chosen (bench/bench.h) chooses them: the same messages on
     * every side.
     */
    public static boolean fails(long pct, int partition, long offset) {
        return pct >= 100 || (pct > 0 && workUs(offset * 64 + partition) % 100 < pct);
    }

    /** Wall clock in microseconds since the epoch (kretry's lateness clock). */
    public static long nowUs() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000L + i.getNano() / 1000;
    }

    public static double cpuSeconds() {
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        return os.getProcessCpuTime() / 1e9;
    }

    /** VmRSS and VmHWM of this process, KB. */
    public static long[] rssKb() {
        long[] r = new long[2];
        try {
            for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (l.startsWith("VmRSS:"))
                    r[0] = Long.parseLong(l.replaceAll("[^0-9]", ""));
                else if (l.startsWith("VmHWM:"))
                    r[1] = Long.parseLong(l.replaceAll("[^0-9]", ""));
            }
        } catch (Exception e) {
            // left 0: reported as such
        }
        return r;
    }

    public static double loadavg() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        } catch (Exception e) {
            return -1;
        }
    }

    /**
     * This JVM's native memory as Native Memory Tracking counts it (the JVM
     * started with -XX:NativeMemoryTracking=summary): `jcmd PID
     * VM.native_memory summary`, run beside this JVM's java, parsed into
     * committed KB a category and in total ("total_committed_kb"). Without
     * NMT (or jcmd) the object says why in "error".
     */
    public static Json nativeMemory() {
        Json j = new Json();
        try {
            String self = ProcessHandle.current().info().command().orElse("java");
            Path jcmd = Path.of(self).resolveSibling("jcmd");
            Process p = new ProcessBuilder(Files.isExecutable(jcmd) ? jcmd.toString() : "jcmd",
                    Long.toString(ProcessHandle.current().pid()), "VM.native_memory", "summary")
                    .redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor();
            var total = java.util.regex.Pattern.compile("^Total: reserved=(\\d+)KB, committed=(\\d+)KB");
            var cat = java.util.regex.Pattern.compile("^-\\s+(.+?) \\(reserved=(\\d+)KB, committed=(\\d+)KB\\)");
            Json cats = new Json();
            for (String l : out.split("\n")) {
                var m = total.matcher(l.trim());
                if (m.find()) {
                    j.put("total_reserved_kb", Long.parseLong(m.group(1)));
                    j.put("total_committed_kb", Long.parseLong(m.group(2)));
                }
                m = cat.matcher(l.trim());
                if (m.find())
                    cats.put(m.group(1).trim().toLowerCase().replace(' ', '_') + "_kb", Long.parseLong(m.group(3)));
            }
            if (!j.f.containsKey("total_committed_kb"))
                j.put("error", out.strip().lines().findFirst().orElse("no output from jcmd"));
            else
                j.put("committed_by_category", cats);
        } catch (Exception e) {
            j.put("error", e.toString());
        }
        return j;
    }

    /**
     * tier_mem's reading of this JVM's memory, added to @j: RSS sampled
     * every 200 ms until five samples in a row lie within 16 KB, at least 2 s
     * after the call (as bench_mem.c settles kretry's), 30 s at most; then
     * the RSS and its high-water mark, the heap in use after a full
     * collection beside its committed size and limit (the JVM keeps the heap
     * it grew to, up to -Xmx), and Native Memory Tracking's committed memory
     * a category (Java Heap among them: committed, not used).
     */
    public static Json memory(Json j) throws InterruptedException {
        long since = System.currentTimeMillis(), end = since + 30_000;
        long[] last = new long[5];
        int k = 0;
        boolean settled = false;
        while (System.currentTimeMillis() < end) {
            Thread.sleep(200);
            last[k++ % 5] = rssKb()[0];
            if (k >= 5 && System.currentTimeMillis() - since >= 2000) {
                long lo = Long.MAX_VALUE, hi = 0;
                for (long v : last) {
                    lo = Math.min(lo, v);
                    hi = Math.max(hi, v);
                }
                if (hi - lo <= 16) {
                    settled = true;
                    break;
                }
            }
        }
        long[] rss = rssKb();
        System.gc();
        var heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
        return j.put("heap_after_gc_kb", heap.getUsed() / 1024).put("heap_committed_kb", heap.getCommitted() / 1024)
                .put("heap_max_kb", heap.getMax() / 1024).put("settled", settled).put("rss_kb", rss[0])
                .put("hwm_kb", rss[1]).put("nmt", nativeMemory()).put("load_max", loadavg());
    }

    /** Sorted copy's p-th percentile (nearest rank, as kretry_bench). */
    public static double percentile(long[] sorted, double p) {
        if (sorted.length == 0)
            return 0;
        int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
    }

    /** The measured window: opened by the first message, closed once. */
    public static final class Window {
        private final AtomicBoolean opened = new AtomicBoolean();
        private volatile long startNs;
        private volatile double startCpu;
        private double secs, cpu;

        public void open() {
            if (!opened.get() && opened.compareAndSet(false, true)) {
                startCpu = cpuSeconds();
                startNs = System.nanoTime();
            }
        }

        public synchronized void close() {
            secs = (System.nanoTime() - startNs) / 1e9;
            cpu = cpuSeconds() - startCpu;
        }

        public double secs() {
            return secs;
        }

        public double cpu() {
            return cpu;
        }
    }

    /** One JSON object on one line, fields in insertion order. */
    public static final class Json {
        private final Map<String, Object> f = new LinkedHashMap<>();

        public Json put(String k, Object v) {
            f.put(k, v);
            return this;
        }

        @Override
        public String toString() {
            StringBuilder b = new StringBuilder("{");
            for (var e : f.entrySet()) {
                if (b.length() > 1)
                    b.append(", ");
                b.append('"').append(e.getKey()).append("\": ");
                Object v = e.getValue();
                if (v == null)
                    b.append("null");
                else if (v instanceof Json j)
                    b.append(j);
                else if (v instanceof Number || v instanceof Boolean)
                    b.append(v instanceof Double d ? String.format("%.3f", d) : v.toString());
                else
                    b.append('"').append(v.toString().replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
            }
            return b.append('}').toString();
        }

        public void print() {
            System.out.println(this);
            System.out.flush();
        }
    }

    /** Throughput fields named as kretry_bench names them. */
    public static Json throughput(String peer, String scenario, long n, Window w) {
        long[] rss = rssKb();
        return new Json().put("peer", peer).put("scenario", scenario).put("messages", n)
                .put("msgs_per_s", Math.round(n / w.secs())).put("secs", w.secs())
                .put("cpu_us_per_msg", w.cpu() * 1e6 / n).put("peak_rss_kb", rss[1])
                .put("load_max", loadavg());
    }

    /**
     * How far behind the input's own due time (record timestamp + delay)
     * the first @p count retries were handled: behind_input_p50/p99/max_ms.
     */
    public static Json behindInput(Json j, long[] behindUs, int count) {
        long[] s = Arrays.copyOf(behindUs, count);
        Arrays.sort(s);
        return j.put("behind_input_p50_ms", percentile(s, 50) / 1000.0)
                .put("behind_input_p99_ms", percentile(s, 99) / 1000.0)
                .put("behind_input_max_ms", (count > 0 ? s[count - 1] : 0) / 1000.0);
    }

    /** Lateness fields as kretry_bench's delay object (ms; early = before due). */
    public static Json lateness(String peer, long[] lateUs, int count) {
        long[] s = Arrays.copyOf(lateUs, count);
        Arrays.sort(s);
        long early = Arrays.stream(s).filter(x -> x < 0).count();
        return new Json().put("peer", peer).put("scenario", "delay").put("messages", count)
                .put("p50_ms", percentile(s, 50) / 1000.0).put("p99_ms", percentile(s, 99) / 1000.0)
                .put("max_ms", (count > 0 ? s[count - 1] : 0) / 1000.0).put("early", early)
                .put("peak_rss_kb", rssKb()[1]).put("load_max", loadavg());
    }

    public static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
