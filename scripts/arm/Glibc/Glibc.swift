// The Swift half of the stand-in Glibc module for Embedded Swift (see module.modulemap): what
// the toolchain's Glibc overlay adds to the C headers and the engine uses. C macros that are
// expressions (errno) or untyped constants (S_IF*) do not come through the importer as the
// overlay spells them.
@_exported import CGlibcAArch64

public var errno: Int32 {
    get { __errno_location().pointee }
    set { __errno_location().pointee = newValue }
}

public var S_IFMT: mode_t { mode_t(0o170000) }
public var S_IFDIR: mode_t { mode_t(0o040000) }
public var S_IFREG: mode_t { mode_t(0o100000) }
