// Random byte reads from a large array (the JVM article's ByteArrayTouch), for
// `hugelab run --preset jvm`. Prints "ns/op: N" for --metric.
//   java -Xms1g -Xmx1g examples/jvm/Touch.java [MiB] [millions of ops]
public class Touch {
    public static void main(String[] args) {
        int mib = args.length > 0 ? Integer.parseInt(args[0]) : 512;
        long ops = (args.length > 1 ? Long.parseLong(args[1]) : 50) * 1_000_000L;
        byte[] a = new byte[mib << 20];
        for (int i = 0; i < a.length; i += 4096) a[i] = 1; // commit every page
        long x = 0x9E3779B97F4A7C15L, sum = 0;
        long t0 = System.nanoTime();
        for (long i = 0; i < ops; i++) {
            x ^= x << 13; x ^= x >>> 7; x ^= x << 17;
            sum += a[(int) ((x >>> 1) % a.length)];
        }
        long t1 = System.nanoTime();
        System.out.println("ns/op: " + (double) (t1 - t0) / ops + " (checksum " + sum + ")");
    }
}
