// InflaterLeak.java: a Java program that leaks native memory the way real ones
// do, through java.util.zip.Inflater objects that are never end()ed: each one
// mallocs a z_stream and zlib's inflate state in libzip, and since they stay
// referenced their cleaners never free them. Stepped through its stdin: it
// prints "ready 0 PID"; at a line it leaks about 2000 Inflaters a second (long
// enough for the JIT to compile the callers) and prints "ready 1"; at the
// next line it stops and prints "ok N". With the arguments "leak SECONDS" it
// reads no input: it leaks at once (ready 1) for that long, then says ok.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.zip.Inflater;

public class InflaterLeak {
    static final ArrayList<Inflater> kept = new ArrayList<>();
    static volatile boolean stop;

    static void openStreams(int n) {
        for (int i = 0; i < n; i++)
            kept.add(new Inflater());
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        boolean stepped = args.length < 2 || !args[0].equals("leak");
        System.out.println("ready 0 " + ProcessHandle.current().pid());
        if (stepped && in.readLine() == null)
            return;
        Thread leaker = new Thread(() -> {
            while (!stop) {
                openStreams(20);
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        leaker.start();
        System.out.println("ready 1");
        if (stepped)
            in.readLine();
        else
            Thread.sleep(Long.parseLong(args[1]) * 1000);
        stop = true;
        leaker.join();
        System.out.println("ok " + kept.size());
    }
}
