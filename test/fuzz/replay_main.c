/* Runs files through a fuzz target without libFuzzer, so the corpus (seeds and minimized
 * findings) is a regression test with any compiler: replay <file-or-dir>... Fails if no file
 * was run; a finding aborts. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		perror(path);
		return -1;
	}
	size_t cap = 4096;
	size_t n = 0;
	uint8_t *buf = malloc(cap);
	size_t got;
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "%s: read error\n", path);
		free(buf);
		return -1;
	}
	/* An exact-size copy, as libFuzzer passes it, so ASan sees reads past the end. */
	uint8_t *data = malloc(n ? n : 1);
	memcpy(data, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(data, n);
	free(data);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of a directory in name order (reproducible runs). Returns the number run, -1 on error. */
static int run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL) {
		perror(dir);
		return -1;
	}
	char **names = NULL;
	size_t count = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.') {
			continue;
		}
		names = realloc(names, (count + 1) * sizeof(*names));
		names[count++] = strdup(e->d_name);
	}
	closedir(d);
	if (count > 1) {
		qsort(names, count, sizeof(*names), cmp_names);
	}
	int ran = 0;
	for (size_t i = 0; i < count; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		struct stat st;
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			if (run_file(path) != 0) {
				ran = -1;
			} else if (ran >= 0) {
				ran++;
			}
		}
		free(names[i]);
	}
	free(names);
	return ran;
}

int main(int argc, char **argv)
{
	int total = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		int ran =
		    S_ISDIR(st.st_mode) ? run_dir(argv[i]) : (run_file(argv[i]) == 0 ? 1 : -1);
		if (ran < 0) {
			return 1;
		}
		total += ran;
	}
	if (total == 0) {
		fprintf(stderr, "%s: no input files\n", argv[0]);
		return 1;
	}
	printf("%s: %d inputs, no finding\n", argv[0], total);
	return 0;
}
