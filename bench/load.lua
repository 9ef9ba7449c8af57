-- load.lua — the request mix of bench/load.sh, the traffic of dashboards and planners: 70%
-- repeated estimates (cached), 5% new estimates (computed and stored), 25% sweep polls.
local counter = 0
local thread_id = 0
local sweep_id = os.getenv("FATHOM_SWEEP_ID") or ""

setup = function(thread)
  thread:set("thread_id", thread_id)
  thread_id = thread_id + 1
end

local cached = '{"model":"gpt3-175B","system":"a100_80g","execution":{"num_procs":1024,' ..
  '"tensor_par":8,"pipeline_par":8,"data_par":16,"batch_size":1024,"pipeline_par_net":1,"data_par_net":1}}'

request = function()
  counter = counter + 1
  local k = counter % 20
  if k < 14 then
    return wrk.format("POST", "/v1/estimate", {["Content-Type"] = "application/json"}, cached)
  elseif k < 15 then
    -- A new request each time: a token budget nobody asked for yet.
    local tokens = 1000000000000 + thread_id * 1000000000 + counter
    local body = '{"model":{"hidden":4096,"attn_heads":32,"num_blocks":32,"seq_size":4096},' ..
      '"tokens":' .. tokens .. ',"num_gpus":512,"gpu_peak_flops":989e12,"mfu":0.4}'
    return wrk.format("POST", "/v1/transformer", {["Content-Type"] = "application/json"}, body)
  else
    return wrk.format("GET", "/v1/sweep/" .. sweep_id)
  end
end

done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.status + summary.errors.timeout
  io.write(string.format("requests %d  rps %.0f  p50 %.2f ms  p99 %.2f ms  max %.2f ms  errors %d (status %d, timeout %d)\n",
    summary.requests, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    errors, summary.errors.status, summary.errors.timeout))
end
