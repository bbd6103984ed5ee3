// The floor: the least work that puts a container's aliases in place after its start, with no
// safety and no bookkeeping. One raw inspect per start event for the pid and the mounts, then
// symlink(2) through /proc/<pid>/root (which follows the container's own symlinks: unsafe, and
// the point is only the speed). SONAMEs are given, not read. Kept as a benchmark baseline.
//
//   java FloorLoop.java SOCKET FILE=SONAME...   prints "repaired <id> <ms since the start event>"
import java.io.*;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import java.util.regex.*;

public class FloorLoop {
    static final Pattern EVENT = Pattern.compile("\"id\":\"([0-9a-f]{64})\".*\"timeNano\":(\\d+)");
    static final Pattern PID = Pattern.compile("\"Pid\":(\\d+)");
    static final Pattern DEST = Pattern.compile("\"Destination\":\"([^\"]+)\"");

    static BufferedReader get(String socket, String path) throws IOException {
        SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(socket));
        ch.write(java.nio.ByteBuffer.wrap(("GET " + path + " HTTP/1.0\r\nHost: d\r\n\r\n").getBytes()));
        BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.UTF_8));
        while (!in.readLine().isEmpty()) { }  // HTTP/1.0: no chunks, the body runs to the end
        return in;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> sonames = new HashMap<>();
        for (int i = 1; i < args.length; i++) sonames.put(args[i].split("=")[0], args[i].split("=")[1]);
        String filter = java.net.URLEncoder.encode("{\"type\":[\"container\"],\"event\":[\"start\"]}", "UTF-8");
        BufferedReader events = get(args[0], "/events?filters=" + filter);
        System.out.println("ready");
        for (String line; (line = events.readLine()) != null; ) {
            Matcher e = EVENT.matcher(line);
            if (!e.find()) continue;
            String inspect;
            try (BufferedReader in = get(args[0], "/containers/" + e.group(1) + "/json")) { inspect = in.readLine(); }
            Matcher pid = PID.matcher(inspect), dest = DEST.matcher(inspect);
            if (!pid.find()) continue;
            while (dest.find()) {
                Path file = Path.of(dest.group(1));
                String soname = sonames.get(file.getFileName().toString());
                if (soname == null) continue;
                try {
                    Files.createSymbolicLink(Path.of("/proc/" + pid.group(1) + "/root" + file.getParent() + "/" + soname),
                            file.getFileName());
                } catch (IOException ignored) { }
            }
            long ms = (System.currentTimeMillis() * 1_000_000L - Long.parseLong(e.group(2))) / 1_000_000L;
            System.out.println("repaired " + e.group(1) + " " + ms);
        }
    }
}
