-- wrk script: replay pre-signed query-interface requests, each exactly once (every nonce is
-- fresh). bench/xm_query.py writes the file named by XM_REQUESTS: one request a line,
-- "appkey<TAB>username<TAB>date<TAB>nonce<TAB>digest<TAB>content-type<TAB>body" with the body's
-- CR LF written as the two characters \n.
local lines = {}
local index = 0

function init(args)
  for line in io.lines(os.getenv("XM_REQUESTS")) do
    lines[#lines + 1] = line
  end
  wrk.method = "POST"
end

function request()
  index = index + 1
  local line = lines[((index - 1) % #lines) + 1]
  local f = {}
  for field in string.gmatch(line, "([^\t]*)\t?") do f[#f + 1] = field end
  local headers = {
    ["X-SVC-APPKEY"] = f[1], ["X-SVC-USERNAME"] = f[2], ["X-SVC-DATE"] = f[3],
    ["X-SVC-NONCE"] = f[4], ["X-SVC-DIGEST"] = f[5], ["Content-Type"] = f[6],
    ["Accept"] = "application/json",
  }
  local body = string.gsub(f[7], "\\n", "\r\n")
  return wrk.format(nil, wrk.path, headers, body)
end

done = function(summary, latency, requests)
  io.write(string.format("JSON {\"requests\":%d,\"duration_us\":%d,\"p50_us\":%d,\"p90_us\":%d,\"p99_us\":%d,\"max_us\":%d,\"errors_status\":%d,\"errors_connect\":%d,\"errors_timeout\":%d}\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, summary.errors.status, summary.errors.connect,
    summary.errors.timeout))
end
