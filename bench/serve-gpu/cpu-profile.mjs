// Preloaded into every process of a server (NODE_OPTIONS=--import <this file>, which may carry
// --import but not --cpu-prof): a CPU profile of the process, sampled every 1 ms (or every
// $ERNIE_CPU_PROFILE_US microseconds), written at exit
// into $ERNIE_CPU_PROFILE_DIR as sidecar-<pid>.cpuprofile or gateway-<pid>.cpuprofile, as
// `node --cpu-prof` would. The inspector session of the process's own thread answers synchronously,
// so the profile is written inside 'exit'.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';

const dir = process.env.ERNIE_CPU_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: Number(process.env.ERNIE_CPU_PROFILE_US ?? 1000) });
  session.post('Profiler.start');
  process.once('exit', () => {
    session.post('Profiler.stop', (err, res) => {
      if (!err) writeFileSync(path.join(dir, `${process.argv.includes('sidecar') ? 'sidecar' : 'gateway'}-${process.pid}.cpuprofile`), JSON.stringify(res.profile));
    });
  });
}
