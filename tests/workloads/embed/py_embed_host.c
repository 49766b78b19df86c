/* A program that embeds CPython through libpython3.X.so and is not
 * called python: runs argv[1] as __main__ with sys.argv = argv[1..].
 * No Python.h: the few functions it calls are declared here (all part of
 * every 3.x libpython's exported API), so it builds against any
 * libpython3.X.so, including one that came without its headers. */
#include <stdio.h>

typedef struct _object PyObject;

void Py_Initialize(void);
int Py_FinalizeEx(void);
PyObject *PyList_New(long size);
int PyList_Append(PyObject *list, PyObject *item);
PyObject *PyUnicode_DecodeFSDefault(const char *s);
int PySys_SetObject(const char *name, PyObject *v);
int PyRun_SimpleFileExFlags(FILE *f, const char *filename, int closeit, void *flags);
void Py_DecRef(PyObject *o);

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
		Py_DecRef(s);
	}
	if (!args || PySys_SetObject("argv", args))
		return 1;
	f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	rc = PyRun_SimpleFileExFlags(f, argv[1], 1, NULL);
	Py_DecRef(args);
	return Py_FinalizeEx() < 0 || rc ? 1 : 0;
}
