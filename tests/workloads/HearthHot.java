// A Java program of known shape for tests/integration/test_java.sh:
// main -> outer -> {hotA, hotB, interpOnly}. hotA does three times hotB's work;
// both call step, small enough for C2 to inline it into them (its frames then
// come from the nmethods' scope descriptors). interpOnly is kept out of the JIT
// by the test (-XX:CompileCommand=exclude) and so runs interpreted. Runs for argv[0] seconds (default 30), printing
// "ready PID" first, then every 250 ms "cpu EPOCH_MS HOTA_NS HOTB_NS": the main
// thread's CPU time inside hotA and hotB so far (whole calls, its own CPU clock),
// the truth a profiler's share is checked against.
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class HearthHot {
    static volatile long sink;
    static final ThreadMXBean MX = ManagementFactory.getThreadMXBean();

    static long step(long i, long s, int k) {
        return (i * k) ^ (s >>> 3);
    }

    static long hotA(long n) {
        long s = 0;
        for (long i = 0; i < n; i++)
            s += step(i, s, 31);
        return s;
    }

    static long hotB(long n) {
        long s = 0;
        for (long i = 0; i < n; i++)
            s += step(i, s, 17);
        return s;
    }

    static long interpOnly(long n) {
        long s = 0;
        for (long i = 0; i < n; i++)
            s += i ^ (s << 1);
        return s;
    }

    static void outer(long secs) {
        long end = System.nanoTime() + secs * 1_000_000_000L, next = System.nanoTime();
        long cpuA = 0, cpuB = 0;
        while (System.nanoTime() < end) {
            long t0 = MX.getCurrentThreadCpuTime();
            sink += hotA(300_000);
            long t1 = MX.getCurrentThreadCpuTime();
            sink += hotB(100_000);
            long t2 = MX.getCurrentThreadCpuTime();
            cpuA += t1 - t0;
            cpuB += t2 - t1;
            sink += interpOnly(2_000);
            if (System.nanoTime() >= next) {
                System.out.println("cpu " + System.currentTimeMillis() + " " + cpuA + " " + cpuB);
                System.out.flush();
                next += 250_000_000L;
            }
        }
    }

    public static void main(String[] args) {
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        outer(args.length > 0 ? Long.parseLong(args[0]) : 30);
    }
}
