/* A program that embeds CPython through libpython3.X.so and is not
 * called python: runs argv[1] as __main__ with sys.argv = argv[1..]. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>

int main(int argc, char **argv)
{
	PyObject *args;
	FILE *f;
	int i, rc;

	if (argc < 2) {
		fprintf(stderr, "usage: %s SCRIPT [ARG...]\n", argv[0]);
		return 2;
	}
	Py_Initialize();
	args = PyList_New(0);
	for (i = 1; args && i < argc; i++) {
		PyObject *s = PyUnicode_DecodeFSDefault(argv[i]);

		if (!s || PyList_Append(args, s))
			return 1;
		Py_DECREF(s);
	}
	if (!args || PySys_SetObject("argv", args))
		return 1;
	f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	rc = PyRun_SimpleFileExFlags(f, argv[1], 1, NULL);
	Py_DECREF(args);
	return Py_FinalizeEx() < 0 || rc ? 1 : 0;
}
