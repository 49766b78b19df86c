/* identity: workloads from /proc/PID/cgroup texts of both layouts (v2's
 * one line, v1's line per hierarchy) as systemd, docker, containerd and
 * cri-o under a kubelet (cgroupfs and systemd drivers), podman and login
 * sessions write them; scripts from interpreters' argv; templates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "identity.h"

#define ID64 "3f4e5a6b7c8d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081"
#define POD "8d3a4c1e-5b2f-4e6a-9c7d-0f1e2d3c4b5a"
#define POD_ "8d3a4c1e_5b2f_4e6a_9c7d_0f1e2d3c4b5a"

/* A v1 machine's file with the workload in name=systemd and cpu. */
static const char *v1_text(char *buf, size_t n, const char *path)
{
	snprintf(buf, n,
		 "12:pids:/\n11:memory:/user.slice\n10:cpu,cpuacct:%s\n9:blkio:/\n"
		 "1:name=systemd:%s\n",
		 path, path);
	return buf;
}

static void parse(const char *text, struct workload_id *id, const char *comm)
{
	memset(id, 0, sizeof(*id));
	assert_int_equal(identity_parse_cgroup(text, id), 0);
	identity_derive(id, comm, "/usr/bin/x");
}

/* Both layouts of one path give the same identity. */
static void parse_both(const char *path, struct workload_id *id, const char *comm)
{
	char v2[512], v1[1024];
	struct workload_id other;

	snprintf(v2, sizeof(v2), "0::%s\n", path);
	parse(v2, id, comm);
	parse(v1_text(v1, sizeof(v1), path), &other, comm);
	assert_memory_equal(id, &other, sizeof(other));
	assert_string_equal(id->cgroup, path);
}

static void test_systemd_service(void **state)
{
	struct workload_id id;

	(void)state;
	parse_both("/system.slice/myapp.service", &id, "python3.11");
	assert_string_equal(id.unit, "myapp.service");
	assert_string_equal(id.service, "myapp");
	assert_string_equal(id.container, "");
	assert_string_equal(id.qos, "");
	/* A service in a user's manager is that service. */
	parse_both("/user.slice/user-1000.slice/user@1000.service/app.slice/sync.service", &id,
		   "sync");
	assert_string_equal(id.unit, "sync.service");
	assert_string_equal(id.service, "sync");
}

static void test_user_sessions(void **state)
{
	struct workload_id id;

	(void)state;
	parse_both("/user.slice/user-1000.slice/session-3.scope", &id, "bash");
	assert_string_equal(id.unit, "session-3.scope");
	assert_string_equal(id.service, "bash"); /* a session is no service */
	parse_both("/user.slice/user-1000.slice/user@1000.service/init.scope", &id, "systemd");
	assert_string_equal(id.unit, "init.scope");
	parse_both("/user.slice/user-1000.slice/user@1000.service", &id, "systemd");
	assert_string_equal(id.unit, "user@1000.service");
	assert_string_equal(id.service, "systemd");
}

static void test_docker(void **state)
{
	struct workload_id id;

	(void)state;
	parse_both("/docker/" ID64, &id, "nginx");
	assert_string_equal(id.runtime, "docker");
	assert_string_equal(id.container, ID64);
	assert_string_equal(id.unit, "");
	assert_string_equal(id.service, "3f4e5a6b7c8d");
	parse_both("/system.slice/docker-" ID64 ".scope", &id, "nginx");
	assert_string_equal(id.runtime, "docker");
	assert_string_equal(id.container, ID64);
	assert_string_equal(id.unit, "docker-" ID64 ".scope");
	assert_string_equal(id.service, "3f4e5a6b7c8d");
	/* Not an id: too short, or upper case. */
	parse_both("/docker/3f4e5a6b7c8d", &id, "x");
	assert_string_equal(id.container, "");
}

static void test_kubepods_cgroupfs(void **state)
{
	struct workload_id id;

	(void)state;
	parse_both("/kubepods/burstable/pod" POD "/" ID64, &id, "java");
	assert_string_equal(id.qos, "burstable");
	assert_string_equal(id.pod, POD);
	assert_string_equal(id.container, ID64);
	assert_string_equal(id.runtime, "cri");
	parse_both("/kubepods/besteffort/pod" POD "/" ID64, &id, "java");
	assert_string_equal(id.qos, "besteffort");
	parse_both("/kubepods/pod" POD "/" ID64, &id, "java");
	assert_string_equal(id.qos, "guaranteed");
	assert_string_equal(id.pod, POD);
}

static void test_kubepods_systemd(void **state)
{
	struct workload_id id;

	(void)state;
	parse_both("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" POD_
		   ".slice/cri-containerd-" ID64 ".scope",
		   &id, "app");
	assert_string_equal(id.qos, "burstable");
	assert_string_equal(id.pod, POD);
	assert_string_equal(id.runtime, "containerd");
	assert_string_equal(id.container, ID64);
	assert_string_equal(id.service, "3f4e5a6b7c8d");
	parse_both("/kubepods.slice/kubepods-pod" POD_ ".slice/crio-" ID64 ".scope", &id, "app");
	assert_string_equal(id.qos, "guaranteed");
	assert_string_equal(id.pod, POD);
	assert_string_equal(id.runtime, "cri-o");
	assert_string_equal(id.container, ID64);
	parse_both("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" POD_
		   ".slice/crio-conmon-" ID64 ".scope",
		   &id, "conmon");
	assert_string_equal(id.qos, "besteffort");
	assert_string_equal(id.container, ""); /* the monitor, not the container */
}

static void test_podman(void **state)
{
	struct workload_id id;

	(void)state;
	parse_both("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID64
		   ".scope/container",
		   &id, "redis-server");
	assert_string_equal(id.runtime, "podman");
	assert_string_equal(id.container, ID64);
	assert_string_equal(id.pod, "");
	assert_string_equal(id.qos, "");
	parse_both("/machine.slice/libpod-" ID64 ".scope", &id, "redis-server");
	assert_string_equal(id.runtime, "podman");
}

/* Which line of a v1 file names the workload. */
static void test_v1_line_choice(void **state)
{
	struct workload_id id;

	(void)state;
	/* No name=systemd line: cpu's path. */
	parse("5:memory:/other\n4:cpu,cpuacct:/docker/" ID64 "\n", &id, "x");
	assert_string_equal(id.container, ID64);
	/* name=systemd at "/" says nothing: cpu's path instead. */
	parse("3:cpu:/system.slice/a.service\n1:name=systemd:/\n", &id, "x");
	assert_string_equal(id.unit, "a.service");
	/* Hybrid: name=systemd before the unified line. */
	parse("1:name=systemd:/system.slice/b.service\n0::/system.slice/c.service\n", &id, "x");
	assert_string_equal(id.unit, "b.service");
	/* Only some other controller: the first. */
	parse("7:pids:/system.slice/d.service\n", &id, "x");
	assert_string_equal(id.unit, "d.service");
	/* All at the root. */
	parse("0::/\n", &id, "x");
	assert_string_equal(id.cgroup, "/");
	assert_string_equal(id.service, "x");
	memset(&id, 0, sizeof(id));
	assert_int_equal(identity_parse_cgroup("garbage\n", &id), -ENOENT);
	assert_int_equal(identity_parse_cgroup("", &id), -ENOENT);
}

/* A path longer than the field is cut, and still parsed whole. */
static void test_long_path(void **state)
{
	char path[2048], text[2100];
	struct workload_id id;
	size_t i;

	(void)state;
	strcpy(path, "/a");
	for (i = 0; i < 100; i++)
		strcat(path, "/deep");
	strcat(path, "/docker/" ID64);
	snprintf(text, sizeof(text), "0::%s\n", path);
	parse(text, &id, "x");
	assert_int_equal(strlen(id.cgroup), WID_CGROUP_MAX - 1);
	assert_string_equal(id.container, ID64);
}

static void cmdline(struct workload_id *id, const char *const *argv)
{
	char buf[1024];
	size_t len = 0;

	for (; *argv; argv++) {
		memcpy(buf + len, *argv, strlen(*argv) + 1);
		len += strlen(*argv) + 1;
	}
	memset(id, 0, sizeof(*id));
	identity_parse_cmdline(buf, len, id);
}

#define SCRIPT_OF(want, ...)                                                                    \
	do {                                                                                    \
		const char *const argv[] = { __VA_ARGS__, NULL };                               \
		cmdline(&id, argv);                                                             \
		assert_string_equal(id.script, want);                                           \
	} while (0)

static void test_cmdline_python(void **state)
{
	struct workload_id id;

	(void)state;
	SCRIPT_OF("uvicorn", "python3", "-m", "uvicorn", "app:api");
	SCRIPT_OF("train.py", "python3", "train.py", "--x");
	SCRIPT_OF("train.py", "/usr/bin/python3.11", "-u", "/srv/ml/train.py", "--epochs", "3");
	SCRIPT_OF("serve.py", "python3", "-X", "importtime", "-W", "ignore", "-OO", "serve.py");
	SCRIPT_OF("serve.py", "python3", "-Xdev", "-Wignore", "-uB", "serve.py");
	SCRIPT_OF("http.server", "python3.12", "-u", "-mhttp.server", "8000");
	SCRIPT_OF("celery", "python", "-um", "celery", "worker");
	SCRIPT_OF("", "python3", "-c", "import x; x.run()");
	SCRIPT_OF("", "python3");
	SCRIPT_OF("", "python3", "-");
	SCRIPT_OF("job.py", "python3", "--check-hash-based-pycs", "never", "job.py");
	SCRIPT_OF("-odd.py", "python3", "--", "-odd.py");
	SCRIPT_OF("", "bash", "run.py"); /* not an interpreter we read */
	SCRIPT_OF("", "pythonista", "x.py");
}

static void test_cmdline_others(void **state)
{
	struct workload_id id;

	(void)state;
	SCRIPT_OF("server.js", "node", "--max-old-space-size=512", "-r", "dotenv/config",
		  "/app/server.js");
	SCRIPT_OF("", "node", "-e", "console.log(1)");
	SCRIPT_OF("worker.rb", "ruby", "-I", "lib", "bin/worker.rb");
	SCRIPT_OF("app.jar", "java", "-Xmx1g", "-jar", "/opt/app.jar");
	SCRIPT_OF("com.example.Main", "java", "-cp", "a.jar:b.jar", "com.example.Main");
}

/* argv is the process's: no NUL at the end (cut), empty, or huge. */
static void test_cmdline_hostile(void **state)
{
	struct workload_id id;
	char *big = malloc(1 << 20);

	(void)state;
	assert_non_null(big);
	memset(&id, 0, sizeof(id));
	identity_parse_cmdline("python3\0tra", 11, &id); /* cut mid-script */
	assert_string_equal(id.script, "");
	identity_parse_cmdline("", 0, &id);
	assert_string_equal(id.script, "");
	memcpy(big, "python3\0", 8);
	memset(big + 8, 'a', (1 << 20) - 8);
	big[(1 << 20) - 1] = '\0';
	identity_parse_cmdline(big, 1 << 20, &id);
	assert_int_equal(strlen(id.script), WID_NAME_MAX - 1);
	memset(big, 0, 1 << 20); /* a million empty arguments */
	memcpy(big, "python3", 7);
	identity_parse_cmdline(big, 1 << 20, &id);
	free(big);
}

static void test_service_derivation(void **state)
{
	struct workload_id id;

	(void)state;
	parse("0::/system.slice/docker-" ID64 ".scope\n", &id, "python3");
	strcpy(id.script, "worker.py"); /* a script beats a container's id */
	identity_derive(&id, NULL, NULL);
	assert_string_equal(id.service, "worker.py");
	parse("0::/system.slice/web.service\n", &id, "python3");
	strcpy(id.script, "worker.py"); /* a unit beats a script */
	identity_derive(&id, NULL, NULL);
	assert_string_equal(id.service, "web");
	memset(&id, 0, sizeof(id));
	identity_derive(&id, "", "/usr/sbin/nginx");
	assert_string_equal(id.service, "nginx");
}

static void test_format(void **state)
{
	struct workload_id id;
	char out[64];

	(void)state;
	parse("0::/kubepods/burstable/pod" POD "/" ID64 "\n", &id, "java");
	assert_int_equal(identity_format(&id, "{service}", out, sizeof(out)), 12);
	assert_string_equal(out, "3f4e5a6b7c8d");
	identity_format(&id, "{qos}/{pod}", out, sizeof(out));
	assert_string_equal(out, "burstable/" POD);
	identity_format(&id, "{comm}-{unit}", out, sizeof(out));
	assert_string_equal(out, "java"); /* the dash goes with the empty unit */
	identity_format(&id, "{unit}:{comm}", out, sizeof(out));
	assert_string_equal(out, "java"); /* and after a leading empty one */
	identity_format(&id, "{unit}", out, sizeof(out));
	assert_string_equal(out, "3f4e5a6b7c8d"); /* nothing: the service */
	identity_format(&id, "app-{comm}", out, sizeof(out));
	assert_string_equal(out, "app-java");
	assert_int_equal(identity_format(&id, "{container}", out, 8), 7); /* cut */
	assert_string_equal(out, "3f4e5a6");
	assert_int_equal(identity_format(&id, "{nope}", out, sizeof(out)), -EINVAL);
	assert_int_equal(identity_format(&id, "{service", out, sizeof(out)), -EINVAL);
	assert_int_equal(identity_check_template("{service}.{exe}.{cgroup}.{runtime}"), 0);
	assert_int_equal(identity_check_template("{pid}"), -EINVAL);
}

/* identity_read() on this very process. */
static void test_read_self(void **state)
{
	struct workload_id id;

	(void)state;
	assert_int_equal(identity_read("/proc", (uint32_t)getpid(), "test_identity", NULL, &id), 0);
	assert_true(id.cgroup[0] == '/');
	assert_string_equal(id.comm, "test_identity");
	assert_true(id.service[0] != '\0');
	assert_int_equal(identity_read("/proc", 0x7ffffff0u, "x", NULL, &id), -ESRCH);
}

/* Rank variables: a launcher's own before a scheduler's, numbers only,
 * the entry the read cap cut not trusted, everything else skipped. */
static void test_environ_ranks(void **state)
{
	static const char env[] = "PATH=/usr/bin\0SLURM_PROCID=7\0RANK=3\0LOCAL_RANK=1\0"
				  "WORLD_SIZE=8\0OMPI_COMM_WORLD_SIZE=99\0RANK_X=5\0";
	static const char mpi[] = "OMPI_COMM_WORLD_RANK=2\0OMPI_COMM_WORLD_LOCAL_RANK=0\0"
				  "OMPI_COMM_WORLD_SIZE=4\0";
	static const char bad[] = "RANK=3; rm -rf /\0LOCAL_RANK=\0WORLD_SIZE=1234567890\0"
				  "PMI_RANK=-1\0SLURM_PROCID=12";
	struct wid_rank r;

	(void)state;
	identity_parse_environ(env, sizeof(env) - 1, &r);
	assert_string_equal(r.rank, "3"); /* RANK over SLURM_PROCID, in either order */
	assert_string_equal(r.local_rank, "1");
	assert_string_equal(r.world_size, "8");
	identity_parse_environ(mpi, sizeof(mpi) - 1, &r);
	assert_string_equal(r.rank, "2");
	assert_string_equal(r.local_rank, "0");
	assert_string_equal(r.world_size, "4");
	/* not numbers, too long, negative; the last entry has no NUL: cut */
	identity_parse_environ(bad, sizeof(bad) - 1, &r);
	assert_string_equal(r.rank, "");
	assert_string_equal(r.local_rank, "");
	assert_string_equal(r.world_size, "");
	identity_parse_environ("", 0, &r);
	assert_string_equal(r.rank, "");
}

/* The job's id, the same on every host: the scheduler's over torchrun's
 * over the MPI launcher's over the rendezvous address. */
static void test_environ_job(void **state)
{
	static const char slurm[] = "MASTER_ADDR=node1\0MASTER_PORT=29500\0SLURM_STEP_ID=0\0"
				    "PMIX_NAMESPACE=slurm.pmix.42.0\0SLURM_JOB_ID=42\0";
	static const char torch[] = "TORCHELASTIC_RUN_ID=none\0MASTER_ADDR=127.0.0.1\0"
				    "MASTER_PORT=29500\0";
	static const char mpi[] = "PMIX_NAMESPACE=1082130433\0OMPI_COMM_WORLD_RANK=1\0";
	static const char elastic[] = "TORCHELASTIC_RUN_ID=a1b2-c3\0MASTER_ADDR=h\0MASTER_PORT=1\0";
	/* a separator, a space, a quote, over 32 characters, half a pair, cut */
	static const char bad[] = "SLURM_JOB_ID=4:2\0TORCHELASTIC_RUN_ID=a b\0PMIX_NAMESPACE=\"x\"\0"
				  "MASTER_ADDR=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\0MASTER_PORT=1\0"
				  "SLURM_JOB_ID=7";
	struct wid_rank r;

	(void)state;
	identity_parse_environ(slurm, sizeof(slurm) - 1, &r);
	assert_string_equal(r.job, "slurm:42.0");
	identity_parse_environ(torch, sizeof(torch) - 1, &r);
	assert_string_equal(r.job, "master:127.0.0.1:29500");
	identity_parse_environ(mpi, sizeof(mpi) - 1, &r);
	assert_string_equal(r.job, "pmix:1082130433");
	assert_string_equal(r.rank, "1");
	identity_parse_environ(elastic, sizeof(elastic) - 1, &r);
	assert_string_equal(r.job, "torchelastic:a1b2-c3");
	identity_parse_environ(bad, sizeof(bad) - 1, &r);
	assert_string_equal(r.job, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_systemd_service),	 cmocka_unit_test(test_user_sessions),
		cmocka_unit_test(test_docker),		 cmocka_unit_test(test_kubepods_cgroupfs),
		cmocka_unit_test(test_kubepods_systemd), cmocka_unit_test(test_podman),
		cmocka_unit_test(test_v1_line_choice),	 cmocka_unit_test(test_long_path),
		cmocka_unit_test(test_cmdline_python),	 cmocka_unit_test(test_cmdline_others),
		cmocka_unit_test(test_cmdline_hostile),	 cmocka_unit_test(test_service_derivation),
		cmocka_unit_test(test_format),		 cmocka_unit_test(test_read_self),
		cmocka_unit_test(test_environ_ranks),
		cmocka_unit_test(test_environ_job),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
