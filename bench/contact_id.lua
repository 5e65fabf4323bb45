-- wrk script: POST a unique Contact ID signal per request (panel and zone count up per thread);
-- prints one JSON summary line that bench/run.py reads. With ALARMHUB_BODIES naming a file of
-- JSON bodies, one a line (bench/run.py writes the realistic mix of bench/mix.py there), the
-- requests send those bodies in order instead, from the first again after the last.
local counter = 0
local thread_id = 0
local token = os.getenv("ALARMHUB_TOKEN") or ""
local prefix = os.getenv("ALARMHUB_PANEL_PREFIX") or "P"  -- one per load generator
local bodies_file = os.getenv("ALARMHUB_BODIES")
local bodies = nil

function setup(thread)
  thread:set("thread_id", thread_id)
  thread_id = thread_id + 1
end

function init(args)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. token
  if bodies_file and bodies_file ~= "" then
    bodies = {}
    for line in io.lines(bodies_file) do
      bodies[#bodies + 1] = line
    end
  end
end

function request()
  counter = counter + 1
  if bodies then
    return wrk.format(nil, wrk.path, nil, bodies[(counter - 1) % #bodies + 1])
  end
  local panel = string.format("%s%d%07d", prefix, thread_id, counter % 10000000)
  local zone = string.format("%03d", counter % 1000)
  local body = '{"dnis":"1234","panel":"' .. panel .. '","code":"E130","area":"01","zone_or_user":"' .. zone .. '"}'
  return wrk.format(nil, wrk.path, nil, body)
end

done = function(summary, latency, requests)
  io.write(string.format("JSON {\"requests\":%d,\"duration_us\":%d,\"p50_us\":%d,\"p99_us\":%d,\"errors_status\":%d,\"errors_connect\":%d,\"errors_timeout\":%d}\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    summary.errors.status, summary.errors.connect, summary.errors.timeout))
end
