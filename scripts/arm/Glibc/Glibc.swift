// The Swift half of the stand-in Glibc module for Embedded Swift (see module.modulemap): what
// the toolchain's Glibc overlay adds to the C headers and the engine uses. C macros that are
// expressions (errno) or untyped constants (S_IF*) do not come through the importer as the
// overlay spells them, nor do variadic functions (open, fcntl).
@_exported import CGlibcAArch64

public var errno: Int32 {
    get { __errno_location().pointee }
    set { __errno_location().pointee = newValue }
}

public var S_IFMT: mode_t { mode_t(0o170000) }
public var S_IFSOCK: mode_t { mode_t(0o140000) }
public var S_IFLNK: mode_t { mode_t(0o120000) }
public var S_IFREG: mode_t { mode_t(0o100000) }
public var S_IFBLK: mode_t { mode_t(0o060000) }
public var S_IFDIR: mode_t { mode_t(0o040000) }
public var S_IFCHR: mode_t { mode_t(0o020000) }
public var S_IFIFO: mode_t { mode_t(0o010000) }

public func open(_ path: UnsafePointer<CChar>, _ oflag: Int32) -> Int32 {
    yolo_arm_open(path, oflag, 0)
}

public func open(_ path: UnsafePointer<CChar>, _ oflag: Int32, _ mode: mode_t) -> Int32 {
    yolo_arm_open(path, oflag, mode)
}

public func fcntl(_ fd: Int32, _ cmd: Int32) -> Int32 {
    yolo_arm_fcntl(fd, cmd, 0)
}

public func fcntl(_ fd: Int32, _ cmd: Int32, _ value: Int32) -> Int32 {
    yolo_arm_fcntl(fd, cmd, value)
}
