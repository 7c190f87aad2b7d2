package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// clockTick is the unit of /proc's CPU times: USER_HZ, 100 on every Linux that
// matters (the kernel's ABI fixes it for /proc whatever the kernel's own HZ).
const clockTick = 10 * time.Millisecond

// cpuTime is the CPU time (user + system) pid and every process below it have used so
// far, as /proc has it: the live processes' own times, and what their children that
// ended and were waited for had used. A process that is gone counts nothing.
func cpuTime(pid int) time.Duration {
	var ticks int64
	for _, p := range descendants(pid) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command's name, which is in parentheses and may hold
		// spaces: state is the first, utime the 12th, stime, cutime, cstime next.
		rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
		f := strings.Fields(rest)
		if len(f) < 15 {
			continue
		}
		for _, v := range f[11:15] {
			n, _ := strconv.ParseInt(v, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * clockTick
}

// descendants returns pid and the processes below it, as /proc lists them now.
func descendants(pid int) []int {
	parents := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, err := parentOf(p); err == nil {
			parents[pp] = append(parents[pp], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, parents[out[i]]...)
	}
	return out
}

// parentOf reads pid's parent from /proc/pid/status.
func parentOf(pid int) (int, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), "PPid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no PPid", pid)
}

// redisProcess finds the Redis server's process (INFO server's process_id) and checks
// that it is on this machine.
func redisProcess(ctx context.Context, rdb *redis.Client) (int, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return 0, fmt.Errorf("redis: INFO server: %w", err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("redis: process_id %q: %w", v, err)
			}
			return pid, onThisMachine("redis-server", pid)
		}
	}
	return 0, errors.New("redis: INFO server names no process_id")
}

// postmaster finds the PostgreSQL server's postmaster: the parent of the backend that
// serves a connection to dbURL.
func postmaster(ctx context.Context, dbURL string) (int, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, fmt.Errorf("postgres: %w", err)
	}
	defer conn.Close(ctx)
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		return 0, fmt.Errorf("postgres: %w", err)
	}
	if err := onThisMachine("postgres", backend); err != nil {
		return 0, err
	}
	return parentOf(backend)
}

// onThisMachine checks that pid is a process of this machine whose command is name.
func onThisMachine(name string, pid int) error {
	comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil || !strings.HasPrefix(strings.TrimSpace(string(comm)), name) {
		return fmt.Errorf("%s: process %d is not on this machine (its CPU time must be read from /proc)", name, pid)
	}
	return nil
}
