package redisstore_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/adapters/redisstore"
	"github.com/seckill/seckill/adapters/testenv"
	"github.com/seckill/seckill/domain"
)

// TestRestartsGateGrabsAfterARestart: a client whose connections report the server's
// run_id notices a restart with its first command after it; from then on the stock
// answers grabs unavailable until Healed, and a heal overtaken by a newer restart does
// not end the gate.
func TestRestartsGateGrabsAfterARestart(t *testing.T) {
	ctx := context.Background()
	addr, stop, start := privateRedis(t)
	restarts := redisstore.NewRestarts()
	opts := &redis.Options{Addr: addr, OnConnect: restarts.Observe}
	redisstore.TuneClientOptions(opts)
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	check(t, restarts.Watch(ctx, client))
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), Restarts: restarts})
	v := voucher(1, 10, 1)
	_, err := s.Warm(ctx, v)
	check(t, err)
	check(t, s.Reserve(ctx, grab(v.ID, 1, 1)))
	if restarts.Healing() {
		t.Fatal("healing before any restart")
	}

	stop()
	start()
	_ = client.Ping(ctx).Err() // the first command after the restart
	if !restarts.Healing() {
		t.Fatal("the restart went unnoticed")
	}
	select {
	case <-restarts.Changed():
	default:
		t.Fatal("no change signaled")
	}
	if err := s.Reserve(ctx, grab(v.ID, 2, 1)); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("grab while healing: %v, want ErrUnavailable", err)
	}
	gen := restarts.Generation()
	stop()
	start()
	_ = client.Ping(ctx).Err()
	restarts.Healed(gen) // overtaken by the second restart
	if !restarts.Healing() {
		t.Fatal("a heal overtaken by a newer restart ended the gate")
	}
	restarts.Healed(restarts.Generation())
	if restarts.Healing() {
		t.Fatal("still healing after Healed")
	}
}

// TestRestartsRefuseAConnectionThatDoesNotAnswer: a new connection whose server stops
// answering after the handshake, while its run_id is read, is refused (the check's
// error wraps ErrUnavailable), so the command that dialed it does not wait out a
// timeout of its own after the check's, nor read the check's late reply as its own.
func TestRestartsRefuseAConnectionThatDoesNotAnswer(t *testing.T) {
	ctx := context.Background()
	link := testenv.NewLink(t, testenv.RedisAddr(t))
	restarts := redisstore.NewRestarts()
	var hang atomic.Bool
	var observed []error
	opts := &redis.Options{Addr: link.Addr(), OnConnect: func(ctx context.Context, cn *redis.Conn) error {
		if hang.Load() {
			link.Hang() // after the handshake: only the check meets the silence
		}
		err := restarts.Observe(ctx, cn)
		observed = append(observed, err)
		return err
	}}
	redisstore.TuneClientOptions(opts)
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	check(t, restarts.Watch(ctx, client))
	check(t, client.Ping(ctx).Err())

	hang.Store(true)
	check(t, client.Close())
	client = redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	err := client.Ping(ctx).Err()
	if len(observed) != 2 || !errors.Is(observed[1], domain.ErrUnavailable) {
		t.Fatalf("the check of a connection that stopped answering returned %v, want an error wrapping ErrUnavailable", observed)
	}
	if err == nil {
		t.Fatal("the command on the refused connection succeeded")
	}
	if restarts.Healing() {
		t.Fatal("a server that did not answer was taken for a changed one")
	}
}

// TestRestartsWatchEveryMasterOfACluster: on a Redis Cluster each master is watched on
// its own. A master that restarts empty is noticed by the first command that reaches
// it, and grabs wait for the heal; commands to the masters that did not restart
// change nothing.
func TestRestartsWatchEveryMasterOfACluster(t *testing.T) {
	ctx := context.Background()
	nodes := privateCluster(t, 2)
	restarts := redisstore.NewRestarts()
	opts := &redis.ClusterOptions{Addrs: []string{nodes[0].addr, nodes[1].addr}, OnConnect: restarts.Observe}
	client := redis.NewClusterClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	check(t, restarts.Watch(ctx, client))
	s := redisstore.NewStock(client, redisstore.Options{Prefix: "t" + testenv.Unique(), Restarts: restarts})
	// Vouchers 1 to 8 land on both masters.
	for id := domain.VoucherID(1); id <= 8; id++ {
		v := voucher(id, 10, 1)
		_, err := s.Warm(ctx, v)
		check(t, err)
		check(t, s.Reserve(ctx, grab(v.ID, 1, 1)))
	}
	ping := func() error {
		return client.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() })
	}
	check(t, ping())
	if restarts.Healing() {
		t.Fatal("healing before any restart")
	}

	for i, n := range nodes {
		n.restart()
		if size := n.probe.DBSize(ctx).Val(); size != 0 {
			t.Fatalf("node %d came back with %d keys, want none", i, size)
		}
		// The first command that reaches the restarted master meets a new run_id.
		testenv.Eventually(t, 30*time.Second, "the restart of master "+strconv.Itoa(i)+" noticed", func() (bool, string) {
			_ = ping()
			return restarts.Healing(), ""
		})
		select {
		case <-restarts.Changed():
		default:
			t.Fatal("no change signaled")
		}
		if err := s.Reserve(ctx, grab(1, 2, 1)); !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("grab while healing: %v, want ErrUnavailable", err)
		}
		restarts.Healed(restarts.Generation())
		check(t, ping())
		if restarts.Healing() {
			t.Fatalf("still healing after Healed and commands to every master (master %d restarted)", i)
		}
	}
}

// TestRestartsNoticeAClusterFailover: when a replica takes over its master's slots
// (a failover, here a manual CLUSTER FAILOVER), the promoted node is a change to heal
// from — it may have been behind — even though it did not restart: Recheck, which
// serve runs every second on a cluster, notices it.
func TestRestartsNoticeAClusterFailover(t *testing.T) {
	ctx := context.Background()
	nodes := privateCluster(t, 2)
	replica := addReplica(t, nodes[1])
	restarts := redisstore.NewRestarts()
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].addr}, OnConnect: restarts.Observe})
	t.Cleanup(func() { _ = client.Close() })
	check(t, restarts.Watch(ctx, client))
	check(t, restarts.Recheck(ctx, client))
	if restarts.Healing() {
		t.Fatal("healing before any failover")
	}

	// A manual failover is abandoned when master and replica do not agree within five
	// seconds (on a busy machine they may not): ask again until it takes. (Its error is
	// not checked: the node may have become master since the look above.)
	var asked time.Time
	testenv.Eventually(t, 90*time.Second, "the replica promoted", func() (bool, string) {
		if strings.Contains(replica.probe.Info(ctx, "replication").Val(), "role:master") {
			return true, ""
		}
		if time.Since(asked) > 7*time.Second {
			_ = replica.probe.ClusterFailover(ctx).Err()
			asked = time.Now()
		}
		return false, ""
	})
	testenv.Eventually(t, 30*time.Second, "the failover noticed", func() (bool, string) {
		client.ReloadState(ctx)
		_ = restarts.Recheck(ctx, client)
		return restarts.Healing(), ""
	})
	select {
	case <-restarts.Changed():
	default:
		t.Fatal("no change signaled")
	}
}

// clusterNode is one node of a throwaway Redis Cluster.
type clusterNode struct {
	addr string
	// probe is a plain client of this node alone.
	probe *redis.Client
	// restart kills the node (kill -9) and starts it again on the same port and
	// cluster configuration, without persistence: it comes back empty, owning its slots.
	restart func()
}

// privateCluster starts a Redis Cluster of n masters, no replicas and no persistence,
// its slots split evenly, for this test alone.
func privateCluster(t *testing.T, n int) []*clusterNode {
	t.Helper()
	ctx := context.Background()
	nodes := make([]*clusterNode, n)
	for i := range nodes {
		node := startClusterNode(t)
		per := 16384 / n
		last := (i+1)*per - 1
		if i == n-1 {
			last = 16383
		}
		check(t, node.probe.ClusterAddSlotsRange(ctx, i*per, last).Err())
		nodes[i] = node
	}
	for _, node := range nodes[1:] {
		meet(t, nodes[0], node)
	}
	for _, node := range nodes {
		clusterOK(t, node)
	}
	return nodes
}

// addReplica starts a node of the cluster as a replica of master and waits until it
// is in sync.
func addReplica(t *testing.T, master *clusterNode) *clusterNode {
	t.Helper()
	ctx := context.Background()
	replica := startClusterNode(t)
	meet(t, master, replica)
	id, err := master.probe.ClusterMyID(ctx).Result()
	check(t, err)
	// The replica must know the master's id before it can follow it.
	testenv.Eventually(t, 30*time.Second, "the replica knows the master", func() (bool, string) {
		return strings.Contains(replica.probe.ClusterNodes(ctx).Val(), id), ""
	})
	check(t, replica.probe.ClusterReplicate(ctx, id).Err())
	testenv.Eventually(t, 30*time.Second, "the replica in sync", func() (bool, string) {
		return strings.Contains(replica.probe.Info(ctx, "replication").Val(), "master_link_status:up"), ""
	})
	clusterOK(t, replica)
	return replica
}

// meet introduces node to the cluster that first belongs to.
func meet(t *testing.T, first, node *clusterNode) {
	t.Helper()
	host, port, _ := net.SplitHostPort(node.addr)
	check(t, first.probe.ClusterMeet(context.Background(), host, port).Err())
}

// startClusterNode starts a cluster-enabled redis-server without persistence, on a
// port of its own, stopped when the test ends.
func startClusterNode(t *testing.T) *clusterNode {
	t.Helper()
	bin := redisServer(t)
	ctx := context.Background()
	port := clusterPort(t)
	dir := t.TempDir()
	node := &clusterNode{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	var cmd *exec.Cmd
	stop := func() {
		if cmd != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			cmd = nil
		}
	}
	start := func() {
		cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-node-timeout", "5000", "--dir", dir)
		check(t, cmd.Start())
		testenv.Eventually(t, 10*time.Second, "node "+node.addr+" answers", func() (bool, string) { return node.probe.Ping(ctx).Err() == nil, "" })
	}
	node.probe = redis.NewClient(&redis.Options{Addr: node.addr, MaxRetries: -1})
	t.Cleanup(func() { _ = node.probe.Close() })
	node.restart = func() {
		stop()
		start()
		clusterOK(t, node)
	}
	start()
	t.Cleanup(stop)
	return node
}

// redisServer returns the path of redis-server, for tests that start servers of their
// own; it skips the test when there is none, but fails it in CI.
func redisServer(t *testing.T) string {
	t.Helper()
	testenv.RedisURL(t)
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found: %v", err)
		}
		t.Skipf("redis-server not found: %v", err)
	}
	return bin
}

// clusterOK waits until node says the cluster is ok.
func clusterOK(t *testing.T, node *clusterNode) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "cluster_state:ok on "+node.addr, func() (bool, string) {
		return strings.Contains(node.probe.ClusterInfo(context.Background()).Val(), "cluster_state:ok"), ""
	})
}

// clusterPort returns a free port whose cluster bus port (10000 above) is free too.
func clusterPort(t *testing.T) int {
	t.Helper()
	for range 200 {
		port := 20000 + rand.IntN(20000)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		_ = ln.Close()
		if err != nil {
			continue
		}
		_ = bus.Close()
		return port
	}
	t.Fatal("no free port for a cluster node")
	return 0
}
