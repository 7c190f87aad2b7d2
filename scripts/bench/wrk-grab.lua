-- wrk script for the grab benchmarks: every request is a POST to WRK_PATH with the
-- bearer token of a user of its own, read from the file WRK_TOKENS (one per line, as
-- `seckill token --count N` prints them). Each of wrk's threads takes its own share
-- of the file, so no two requests send the same user, until a thread runs out and
-- starts its share again.
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  local path = os.getenv("WRK_PATH") or "/hello"
  local all = {}
  for line in io.lines(os.getenv("WRK_TOKENS")) do
    all[#all + 1] = line
  end
  local n = tonumber(os.getenv("WRK_THREADS") or "1")
  local share = math.floor(#all / n)
  requests = {}
  for i = id * share + 1, (id + 1) * share do
    requests[#requests + 1] = wrk.format("POST", path, { ["Authorization"] = "Bearer " .. all[i] })
  end
  next = 1
end

function request()
  local r = requests[next]
  next = next % #requests + 1
  return r
end
