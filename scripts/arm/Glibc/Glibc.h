// The C library headers the engine uses (see scripts/arm/Glibc/module.modulemap).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

// Variadic C functions do not come through the importer; the overlay (Glibc.swift) offers the
// same fixed-argument forms as the toolchain's Glibc overlay, over these.
static inline int yolo_arm_open(const char *path, int oflag, mode_t mode) { return open(path, oflag, mode); }
static inline int yolo_arm_fcntl(int fd, int cmd, int value) { return fcntl(fd, cmd, value); }
