// chain-client: the seed's benchmark as a C client, to measure FUSE
// servers without a Go runtime on the client side. Each of THREADS
// threads opens, reads and closes ROOT/devices/system/cpu/cpu<i>/topology/
// core_id (files), or looks up ROOT/devices/system/cpu/missing (missing),
// TIMES times, unpinned (as the seed's single phase) unless -p.
//
//   gcc -O2 -pthread -o /tmp/chain-client scripts/measure/chain-client.c
//   /tmp/chain-client [-p] ROOT files|missing THREADS TIMES
//
// It prints one line: per-op of a thread (wall over each thread's
// operations), aggregate per-op (wall over all operations), and the
// threads' CPU migrations per op (nr_migrations in /proc/thread-self/sched).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *root;
static int missing, pin, times;
static pthread_barrier_t start;

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long migrations(void) {
	FILE *f = fopen("/proc/thread-self/sched", "r");
	char line[256];
	long n = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, "se.nr_migrations", 16) == 0)
			n = atol(strchr(line, ':') + 1);
	fclose(f);
	return n;
}

struct worker {
	int index;
	long migrations;
	int failed;
};

static void *run(void *arg) {
	struct worker *w = arg;
	char path[4096], buf[64];
	if (pin) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->index % sysconf(_SC_NPROCESSORS_ONLN), &set);
		pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	}
	if (missing)
		snprintf(path, sizeof path, "%s/devices/system/cpu/missing", root);
	else
		snprintf(path, sizeof path, "%s/devices/system/cpu/cpu%d/topology/core_id", root, w->index % 64);
	pthread_barrier_wait(&start);
	long m0 = migrations();
	for (int i = 0; i < times; i++) {
		if (missing) {
			struct stat st;
			if (stat(path, &st) == 0 || errno != ENOENT)
				w->failed++;
			continue;
		}
		int fd = open(path, O_RDONLY);
		if (fd < 0 || read(fd, buf, sizeof buf) < 0)
			w->failed++;
		if (fd >= 0)
			close(fd);
	}
	w->migrations = migrations() - m0;
	return NULL;
}

int main(int argc, char **argv) {
	int opt;
	while ((opt = getopt(argc, argv, "p")) != -1)
		pin = 1;
	if (argc - optind != 4) {
		fprintf(stderr, "usage: %s [-p] ROOT files|missing THREADS TIMES\n", argv[0]);
		return 2;
	}
	root = argv[optind];
	missing = strcmp(argv[optind + 1], "missing") == 0;
	int threads = atoi(argv[optind + 2]);
	times = atoi(argv[optind + 3]);
	if (threads < 1 || times < 1) {
		fprintf(stderr, "THREADS and TIMES must be at least 1\n");
		return 2;
	}
	pthread_t tid[threads];
	struct worker w[threads];
	pthread_barrier_init(&start, NULL, threads + 1);
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){.index = i};
		pthread_create(&tid[i], NULL, run, &w[i]);
	}
	pthread_barrier_wait(&start);
	double t0 = now();
	long migr = 0;
	int failed = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		migr += w[i].migrations;
		failed += w[i].failed;
	}
	double wall = now() - t0;
	printf("threads=%d per-op=%.1fus aggregate=%.2fus migrations/op=%.3f failed=%d\n", threads,
	       wall / times * 1e6, wall / ((double)times * threads) * 1e6, (double)migr / ((double)times * threads), failed);
	return failed ? 1 : 0;
}
