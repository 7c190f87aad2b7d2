#!/usr/bin/env bash
# Runs every check and test of seckill against a throwaway Redis and PostgreSQL:
#   bash scripts/test.sh            # gofmt, go vet, golangci-lint, wire diff, go test -race ./...,
#                                   # then the Redis tests again on a Redis Cluster,
#                                   # and a Redis Sentinel failover
#   bash scripts/test.sh -run Burst # extra arguments go to go test
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/services.sh

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted"; exit 1; fi
echo "== go vet"
go vet ./...
# golangci-lint (its linters and their reasons: .golangci.yml), pinned, built from the
# module proxy into .cache/bin on first use. Installed with `go install` rather than
# as a go.mod tool: as a tool its ~190 modules would join the service's build list
# (go.sum would triple) and move some of the service's own dependencies.
echo "== golangci-lint"
lint_version=2.15.0
lint=.cache/bin/golangci-lint
# Built with the Go it analyses: a linter built with an older Go cannot read a newer standard library.
if ! "$lint" version 2>/dev/null | grep -q "has version $lint_version built with $(go env GOVERSION) "; then
	echo "installing golangci-lint v$lint_version into .cache/bin (a few minutes, once)"
	GOBIN="$PWD/.cache/bin" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v$lint_version"
fi
"$lint" run ./...
# govulncheck against a vulnerability database built here from a pinned version of
# golang.org/x/vulndb (the module proxy serves it; vuln.go.dev need not be reachable).
# A known vulnerability the code reaches in a module fails the run, except the
# advisories in scripts/vuln-reviewed.txt, each with the reason it does not apply. One
# in the standard library is listed with the Go release that fixes it: the fix is a
# newer Go (README, "Two commands"), not a change here.
echo "== govulncheck"
command -v jq >/dev/null 2>&1 || apt_install jq || { echo "jq is missing: install it"; exit 1; }
vuln_version=v1.9.0
vulndb_version=v0.0.0-20261105234957-e22db6528018
vulncheck=.cache/bin/govulncheck
if ! go version "$vulncheck" 2>/dev/null | grep -q ": $(go env GOVERSION)$" ||
	! go version -m "$vulncheck" 2>/dev/null | grep -q "mod.*golang.org/x/vuln.*$vuln_version"; then
	GOBIN="$PWD/.cache/bin" go install "golang.org/x/vuln/cmd/govulncheck@$vuln_version"
fi
vulndb=.cache/vulndb-$vulndb_version
if [ ! -f "$vulndb/index/db.json" ]; then
	GOBIN="$PWD/.cache/bin" go install "golang.org/x/vulndb/cmd/indexdb@$vulndb_version"
	src=$(go mod download -json "golang.org/x/vulndb@$vulndb_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	rm -rf "$vulndb.osv" "$vulndb" && mkdir -p "$vulndb.osv"
	cp "$src"/data/osv/*.json "$vulndb.osv/"
	chmod -R u+w "$vulndb.osv"
	while read -r id _; do
		case "$id" in GO-*) rm -f "$vulndb.osv/$id.json" ;; esac
	done <scripts/vuln-reviewed.txt
	.cache/bin/indexdb -vulns "$vulndb.osv" -out "$vulndb"
	rm -rf "$vulndb.osv"
fi
grep '^GO-' scripts/vuln-reviewed.txt | cut -d' ' -f1 | sed 's/^/reviewed, does not apply: /'
"$vulncheck" -db "file://$PWD/$vulndb" -format json ./... >.cache/govulncheck.json
# A finding whose trace starts at a function is one the code reaches (not merely imports).
reached=$(jq -r 'select(.finding != null) | .finding | select(.trace[0].function != null) |
	"\(.osv) \(.trace[0].module) fixed in \(.fixed_version // "no release yet")"' .cache/govulncheck.json | sort -u)
if stdlib=$(grep ' stdlib ' <<<"$reached"); then
	echo "the standard library of $(go env GOVERSION) has known vulnerabilities the code reaches; build with a Go release that fixes them:"
	echo "$stdlib"
fi
if modules=$(grep -v ' stdlib ' <<<"$reached"); then
	echo "known vulnerabilities the code reaches in its modules (.cache/govulncheck.json; upgrade, or review into scripts/vuln-reviewed.txt):"
	echo "$modules"
	exit 1
fi
echo "== wire diff"
if ! out=$(cd cmd/seckill && go tool wire diff . 2>&1); then
	echo "wire_gen.go is stale or wire failed (run: go generate ./cmd/seckill):"
	echo "$out"
	exit 1
fi

# The live sale page's test drives a real headless Chromium (Debian's chromium).
if ! command -v chromium >/dev/null 2>&1; then
	apt_install chromium || echo "chromium is missing: the browser test skips (and fails under CI=true)"
fi
start_services
start_cluster
# The end-to-end tests in cmd/seckill stop and start the throwaway PostgreSQL to test
# outages, so they run after the other packages rather than beside them.
# go test stops a test binary after 10 minutes by default; the end-to-end package runs
# near that on a busy two-core machine, so every pass gets a budget well inside CI's.
timeout=${SECKILL_TEST_TIMEOUT:-40m}
echo "== go test -race (packages)"
go test -race -count=1 -timeout "$timeout" "$@" $(go list ./... | grep -v '/cmd/seckill$')
# The same repository and HTTP tests again with a SQLite file per test in place of
# PostgreSQL: the zero-setup mode's database runs the same repositories and migrations.
echo "== go test -race (packages that use the database, on SQLite)"
SECKILL_TEST_DATABASE_URL=sqlite go test -race -count=1 -timeout "$timeout" "$@" ./adapters/sqlstore ./adapters/strategies/sqlstock ./adapters/httpapi ./adapters/webhook
# A short run of each fuzz target beyond its committed seed corpus (testdata/fuzz),
# which the passes above already ran. SECKILL_FUZZTIME lengthens it; 0 skips it.
# The budget is a count of inputs, not a duration: Go 1.26's fuzz coordinator can
# report a bare "context deadline exceeded" as a failure when a -fuzztime duration
# ends while a busy machine's worker is mid-input (go.dev/issue/75804, fixed in 1.27).
fuzztime=${SECKILL_FUZZTIME:-5000x}
if [ "$fuzztime" != 0 ]; then
	echo "== go test -fuzz ($fuzztime each)"
	for target in \
		adapters/httpapi:FuzzCreateVoucherBody adapters/httpapi:FuzzEditVoucherBody adapters/httpapi:FuzzGrabBody \
		adapters/httpapi:FuzzOrderIDs adapters/httpapi:FuzzVoucherIDs \
		adapters/httpapi:FuzzQueryStrings adapters/httpapi:FuzzTokenClaims \
		adapters/httpapi:FuzzJSONString adapters/httpapi:FuzzClaimsAsTheReference adapters/redisstore:FuzzDecodeEntry; do
		go test -run '^$' -fuzz "^${target#*:}\$" -fuzztime "$fuzztime" "./${target%%:*}"
	done
fi
echo "== go test -race (end to end: cmd/seckill)"
# The Sentinel failover test runs in its own pass below, with its servers.
go test -race -count=1 -timeout "$timeout" -skip '^TestSentinelFailover' "$@" ./cmd/seckill
# The Redis adapter's and the WATCH strategy's tests, the reference burst, the
# multi-instance test, the edits racing a sale, the sale's clock told to clients, the
# orders' export, the event streams across instances, the webhooks through a kill -9,
# the waiting room, the waitlist, the draw and a campaign's drop (its waitlists, its waiting room) once more on a
# three-master Redis Cluster:
# the service runs on one Redis server or a cluster.
echo "== go test -race (on a Redis Cluster: the Redis adapter, the WATCH strategy, the burst, several instances, edits, time, export, events, webhooks, waiting room, waitlist, draw, a drop)"
SECKILL_TEST_REDIS_URL=cluster go test -race -count=1 -timeout "$timeout" "$@" ./adapters/redisstore ./adapters/strategies/watchstock ./adapters/stocktest
SECKILL_TEST_REDIS_URL=cluster go test -race -count=1 -timeout "$timeout" \
	-run 'TestReferenceBurst|TestFulfillReferenceBurstEndToEnd|TestInstancesShareASaleThroughAKillNine|TestEditRacesASaleOnTwoInstances|TestEditReachesEveryInstance|TestDenyListReachesEveryInstance|TestTimeAndStateByTheSaleClock|TestExportStreamsBesideTheSaleOnPostgres|TestEventsReachStreamsOnEveryInstance|TestWebhooksSurviveKillNine|TestWaitingRoomAdmitsInThePublishedOrder|TestWaitlistWinsReturnedUnitsEndToEnd|TestDrawEndToEnd|TestDrawSurvivesAKillNineOfTheDrawingInstance|TestCampaignDropKeepsItsPromises|TestCampaignWaitlistKeepsItsPromises|TestCampaignWaitingRoomKeepsItsPromises|TestCampaignDrawKeepsItsPromises' "$@" ./cmd/seckill

# A failover: a master, its replica and a Redis Sentinel; the test kills the master.
echo "== go test -race (Redis Sentinel: a failover under a sale)"
start_sentinel
go test -race -count=1 -timeout "$timeout" -run '^TestSentinelFailover' "$@" ./cmd/seckill
