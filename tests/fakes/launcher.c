/* The fake Codex CLI as a native executable: it runs the Python fake installed beside it.
 *
 * Installed as DIR/NAME by tests/fakes (install_fake_codex), next to DIR/NAME.fake.py, a
 * #! script (tests/fakes/codex.py). This program finds its own file (symlinks resolved)
 * through /proc/self/exe and execs NAME.fake.py in the same process with the same
 * arguments (argv[0] included) and environment, so the pid, the session and every fault of the Python fake
 * are the fake's own. A file replaced while it starts reads as "PATH (deleted)": the
 * script beside the path is run all the same.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char SCRIPT_SUFFIX[] = ".fake.py";
static const char DELETED[] = " (deleted)";

int main(int argc, char **argv) {
    char script[PATH_MAX];
    size_t room = sizeof script - sizeof SCRIPT_SUFFIX;
    ssize_t length = readlink("/proc/self/exe", script, room);
    (void)argc;
    if (length < 0 || (size_t)length >= room) {
        fprintf(stderr, "fake codex: cannot read /proc/self/exe: %s\n",
                length < 0 ? strerror(errno) : "path too long");
        return 127;
    }
    script[length] = '\0';
    size_t deleted = strlen(DELETED);
    if ((size_t)length > deleted && strcmp(script + length - deleted, DELETED) == 0) {
        script[length - deleted] = '\0';
    }
    strcat(script, SCRIPT_SUFFIX);
    execv(script, argv);
    fprintf(stderr, "fake codex: cannot run %s: %s\n", script, strerror(errno));
    return 127;
}
