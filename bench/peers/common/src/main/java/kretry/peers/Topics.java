package kretry.peers;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * Creates (and waits until the broker lists them) or deletes a run's topics.
 *   java kretry.peers.Topics create BOOTSTRAP PARTITIONS NAME...
 *   java kretry.peers.Topics delete BOOTSTRAP NAME...
 */
public final class Topics {
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[1]);
        try (Admin admin = Admin.create(p)) {
            if (a[0].equals("delete")) {
                admin.deleteTopics(Arrays.asList(a).subList(2, a.length)).all().get(30, TimeUnit.SECONDS);
                return;
            }
            int parts = Integer.parseInt(a[2]);
            List<NewTopic> nt = new ArrayList<>();
            for (String name : Arrays.asList(a).subList(3, a.length))
                nt.add(new NewTopic(name, parts, (short) 1));
            admin.createTopics(nt).all().get(30, TimeUnit.SECONDS);
            long deadline = System.currentTimeMillis() + 10000;
            while (System.currentTimeMillis() < deadline) {
                Set<String> names = admin.listTopics().names().get(10, TimeUnit.SECONDS);
                if (names.containsAll(Arrays.asList(a).subList(3, a.length)))
                    return;
                Thread.sleep(100);
            }
            throw new IllegalStateException("topics not listed after 10 s");
        }
    }
}
