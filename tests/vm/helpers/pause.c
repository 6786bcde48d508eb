/*
 * pause: the pod sandbox's process, as Kubernetes' pause image has it (a container image
 * built from this static binary by tests/vm/cri/prepare.sh; no registry in the VM).
 * Sleeps until SIGTERM or SIGINT, then exits 0.
 */
#include <signal.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

int main(void) {
    signal(SIGTERM, stop);
    signal(SIGINT, stop);
    for (;;) pause();
}
