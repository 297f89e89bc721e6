// A JVM of varied Java code for tests/integration/test_java.sh: three threads
// for argv[0] seconds (default 8) — recursion (fib, which C2 inlines into
// itself), a HashMap with boxing and method references, and streams, sorting
// and exceptions — then it exits. Prints "ready PID" first.
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

public class HearthMixed {
    static volatile long sink;

    static int fib(int n) {
        return n < 2 ? n : fib(n - 1) + fib(n - 2);
    }

    static void fibber(long end) {
        while (System.nanoTime() < end)
            sink += fib(24);
    }

    static void mapper(long end) {
        Map<String, Integer> m = new HashMap<>();
        int i = 0;
        while (System.nanoTime() < end) {
            m.merge("k" + (i++ % 5000), 1, Integer::sum);
            if (m.size() > 4000)
                m.clear();
        }
    }

    static void streamer(long end) {
        while (System.nanoTime() < end) {
            List<Integer> l = IntStream.range(0, 2000).boxed().collect(Collectors.toList());
            Collections.sort(l, Comparator.reverseOrder());
            try {
                throw new IllegalStateException("x" + l.get(0));
            } catch (IllegalStateException e) {
                sink += e.getMessage().length();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        long secs = args.length > 0 ? Long.parseLong(args[0]) : 8;
        long end = System.nanoTime() + secs * 1_000_000_000L;
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        List<Thread> ts = new ArrayList<>();
        ts.add(new Thread(() -> fibber(end), "fibber"));
        ts.add(new Thread(() -> mapper(end), "mapper"));
        ts.add(new Thread(() -> streamer(end), "streamer"));
        for (Thread t : ts)
            t.start();
        for (Thread t : ts)
            t.join();
    }
}
