#include "common/thread_priority.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ee {

void lower_thread_priority() {
#ifdef __linux__
  sched_param p{};
  p.sched_priority = 0;
  (void)sched_setscheduler(0, SCHED_BATCH, &p);  // 0 = the calling thread on Linux
  (void)setpriority(PRIO_PROCESS, pid_t(syscall(SYS_gettid)), 5);
#endif
}

}  // namespace ee
