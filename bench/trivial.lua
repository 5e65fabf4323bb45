-- wrk script: GET the trivial handler; the same summary line as contact_id.lua.
done = function(summary, latency, requests)
  io.write(string.format("JSON {\"requests\":%d,\"duration_us\":%d,\"p50_us\":%d,\"p99_us\":%d,\"errors_status\":%d,\"errors_connect\":%d,\"errors_timeout\":%d}\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    summary.errors.status, summary.errors.connect, summary.errors.timeout))
end
