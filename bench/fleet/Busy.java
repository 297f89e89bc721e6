// bench/fleet: a JVM that keeps two threads busy in interpreted and compiled code.
import java.util.HashMap;

public class Busy {
    static long work(int n) {
        HashMap<Integer, Long> m = new HashMap<>();
        long s = 0;
        for (int i = 0; i < n; i++) {
            m.put(i & 1023, (long) i * 31);
            s += m.get(i & 1023) ^ (s >>> 3);
        }
        return s;
    }

    public static void main(String[] args) throws Exception {
        Runnable r = () -> { long s = 0; while (true) { s += work(200000); if (s == 42) System.out.println(s); } };
        Thread t = new Thread(r, "busy-worker");
        t.setDaemon(true);
        t.start();
        r.run();
    }
}
