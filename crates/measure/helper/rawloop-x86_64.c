/* The raw loop `oscost crosscheck` runs beside the tools users already trust: the
   smallest C program that does what oscost's rows say they time, so that a gap
   between another tool and oscost can be told apart from a gap inside oscost.

   Usage: rawloop getppid N   N getppid calls, each one inline `syscall` instruction
          rawloop enosys N    N calls of a number no kernel implements (1023): the bare
                              entry and exit, which no per-process kernel object touches
          rawloop pipe N      N round trips of one byte each way over two pipes between
                              two processes (raw read/write), timed by the parent
   Prints one line, "<what> <ns per op> ns/<op>"; a pipe round trip is two hand-offs,
   and the figure is per hand-off. Exit status 0, or 1 with a message on stderr.

   The program runs wherever it is started (CPU affinity and timer slack are inherited
   from whoever starts it) and takes nothing else from its environment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static long raw0(long nr) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr) : "rcx", "r11", "memory");
    return ret;
}

static long raw3(long nr, long a, long b, long c) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int fail(const char *what) {
    fprintf(stderr, "rawloop: %s\n", what);
    return 1;
}

/* N calls of `nr`, each of which must return what the first returned. */
static int call_loop(const char *name, long nr, long n) {
    long expected = raw0(nr);
    for (long i = 0; i < n / 10; i++) raw0(nr); /* warm-up */
    double t0 = now_ns();
    for (long i = 0; i < n; i++)
        if (raw0(nr) != expected) return fail("the call's result changed");
    double t1 = now_ns();
    printf("%s %.3f ns/call\n", name, (t1 - t0) / (double)n);
    return 0;
}

/* One side of the ping-pong: `first` sends before it receives. */
static int turns(int in, int out, long n, int first) {
    char c = 'x';
    for (long i = 0; i < n; i++) {
        if (first && raw3(SYS_write, out, (long)&c, 1) != 1) return -1;
        if (raw3(SYS_read, in, (long)&c, 1) != 1) return -1;
        if (!first && raw3(SYS_write, out, (long)&c, 1) != 1) return -1;
    }
    return 0;
}

static int pipe_loop(long n) {
    int there[2], back[2];
    if (pipe(there) != 0 || pipe(back) != 0) return fail("pipe");
    long warm = n / 10 + 1;
    pid_t child = fork();
    if (child < 0) return fail("fork");
    if (child == 0) _exit(turns(there[0], back[1], warm + n, 0) == 0 ? 0 : 1);
    if (turns(back[0], there[1], warm, 1) != 0) return fail("warm-up round trip");
    double t0 = now_ns();
    if (turns(back[0], there[1], n, 1) != 0) return fail("round trip");
    double t1 = now_ns();
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return fail("the peer process failed");
    printf("pipe %.3f ns/hand-off\n", (t1 - t0) / (2.0 * (double)n));
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) return fail("usage: rawloop getppid|enosys|pipe N");
    char *end = NULL;
    long n = strtol(argv[2], &end, 10);
    if (*end != '\0' || n < 1 || n > 1000000000L) return fail("N must be 1..1000000000");
    if (strcmp(argv[1], "getppid") == 0) return call_loop("getppid", SYS_getppid, n);
    if (strcmp(argv[1], "enosys") == 0) return call_loop("enosys", 1023, n);
    if (strcmp(argv[1], "pipe") == 0) return pipe_loop(n);
    return fail("usage: rawloop getppid|enosys|pipe N");
}
