// What a bench reads about a whole process (its own or a server it started) to charge costs
// per message: CPU time and context switches, summed over every thread; and, of a server, its
// own metrics.
//
// Thread-safety: functions only. Errors: a process that is gone (or a /proc it cannot read)
// yields 0, so a figure turns implausible rather than the bench dying after its measurement.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string_view>

namespace kf::bench {

// CPU seconds (user + system) used so far by process `pid`, or by this process when pid <= 0.
double CpuSeconds(pid_t pid);

// CPU seconds used so far by the calling thread.
double ThreadCpuSeconds();

// Context switches (voluntary + involuntary) so far, summed over the threads of process `pid`
// (this process when pid <= 0) that are alive now. On a VM each one can cost tens of
// microseconds (a sleeping vCPU is woken through the hypervisor), so their count per message
// explains latency that no CPU profile shows.
uint64_t ContextSwitches(pid_t pid);

// The sum of every sample of metric `name` (all its label sets) in the /metrics of the server
// whose HTTP port is `http_port`; -1 when the scrape fails or has no such sample.
double MetricSum(int http_port, std::string_view name);

}  // namespace kf::bench
