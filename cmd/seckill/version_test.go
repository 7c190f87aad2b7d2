package main

import (
	"runtime/debug"
	"testing"
)

// The version line names the build's commit when the build recorded one, and says why
// not when it did not.
func TestVersionOf(t *testing.T) {
	for _, tc := range []struct {
		settings []debug.BuildSetting
		want     string
	}{
		{nil, "seckill (devel) (go1.26.8, revision unknown: go run, a git worktree and -buildvcs=false record none; go build in a git clone does)"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "8ec873f0554bacd7ba2b3c2750b7058921865382"}, {Key: "vcs.time", Value: "2026-12-01T14:00:00Z"}, {Key: "vcs.modified", Value: "false"}},
			"seckill (devel) (go1.26.8, revision 8ec873f0554bacd7ba2b3c2750b7058921865382 2026-12-01T14:00:00Z)"},
		{[]debug.BuildSetting{{Key: "vcs.revision", Value: "8ec873f"}, {Key: "vcs.modified", Value: "true"}},
			"seckill (devel) (go1.26.8, revision 8ec873f+dirty)"},
	} {
		info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: tc.settings}
		if got := versionOf(info); got != tc.want {
			t.Errorf("versionOf(%v) = %q, want %q", tc.settings, got, tc.want)
		}
	}
}
