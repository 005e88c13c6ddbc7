# -*- test-case-name: rocketmq_tx.store.test.test_mappedfile -*-
"""
Fixed-size, pre-allocated, memory-mapped files named by their starting offset (Java
``MappedFile``) and the ordered directory of them (Java ``MappedFileQueue``).

Writes go through ``mmap`` (a quick measurement of 1 KiB appends: mmap slice assignment
about 700k/s against 525k/s for ``os.pwrite``; reads need no system call either). Files are
allocated with ``posix_fallocate`` when created, so a full disk fails the *creation* of a
file (which the CommitLog reports as CREATE_MAPEDFILE_FAILED) rather than killing the
process with SIGBUS on a later write into a sparse hole.

Thread model: one writer at a time (the CommitLog's put lock, or a ConsumeQueue's owner), any
number of readers, and a flusher. The list of files is replaced, never mutated in place, so
readers and the flusher can iterate over a snapshot. A reader that races with the deletion of
a file gets ``None`` (never an exception).
"""

from __future__ import annotations

import errno
import logging
import mmap
import os
import struct
from collections.abc import Callable

from rocketmq_tx.store.formats import file_name

__all__ = ["MappedFile", "MappedFileQueue", "OS_PAGE_SIZE"]

log = logging.getLogger("rocketmq_tx.store")

#: Java ``MappedFile.OS_PAGE_SIZE``: the unit of ``flushLeastPages``.
OS_PAGE_SIZE = 4096
_ZERO_CHUNK = 1 << 20
_LONG = struct.Struct(">q")
#: suffix of a file being created (see :class:`MappedFile`); leftovers are deleted at load
CREATING_SUFFIX = ".creating"


def _fsync_dir(path: str) -> None:
    """Make a new directory entry durable (SYNC_FLUSH acknowledgements rely on it)."""
    dfd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


class MappedFile:
    """
    One file of a :class:`MappedFileQueue`.

    :ivar file_from_offset: the global offset of the file's first byte (its name).
    :ivar wrote_position: bytes written so far (Java ``wrotePosition``).
    :ivar flushed_position: bytes known to be on disk (Java ``flushedPosition``).
    :ivar store_timestamp: store time of the last message appended (for the checkpoint).
    """

    # slots: the append path reads and moves these positions for every message
    __slots__ = ("path", "file_name", "file_size", "file_from_offset", "wrote_position", "flushed_position",
                 "store_timestamp", "first_create_in_queue", "_closed", "mm", "fd")

    def __init__(self, path: str, file_size: int, *, create: bool = True, preallocate: bool = True) -> None:
        self.path = path
        self.file_name = os.path.basename(path)
        self.file_size = file_size
        self.file_from_offset = int(self.file_name)
        self.wrote_position = 0
        self.flushed_position = 0
        self.store_timestamp = 0
        self.first_create_in_queue = False
        self._closed = False
        # A new file is allocated under a temporary name and renamed into place, so a crash
        # during creation never leaves a short file that would make the next load fail.
        new = create and not os.path.exists(path)
        open_path = path + CREATING_SUFFIX if new else path
        flags = os.O_RDWR | (os.O_CREAT | os.O_TRUNC if new else 0)
        fd = os.open(open_path, flags, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size < file_size and not preallocate:
                os.ftruncate(fd, file_size)
            elif size < file_size:
                try:
                    os.posix_fallocate(fd, 0, file_size)
                except OSError as e:
                    if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                        raise
                    os.ftruncate(fd, file_size)
            self.mm = mmap.mmap(fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            if new:
                os.rename(open_path, path)
                _fsync_dir(os.path.dirname(path) or ".")
        except BaseException:
            os.close(fd)
            if new:
                try:
                    os.unlink(open_path)
                except OSError:
                    pass
            raise
        self.fd = fd

    # -- state

    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    @property
    def file_tail_offset(self) -> int:
        return self.file_from_offset + self.file_size

    def is_available(self) -> bool:
        return not self._closed

    def last_modified(self) -> float:
        """Seconds since the epoch (Java ``getLastModifiedTimestamp`` is in ms)."""
        try:
            return os.stat(self.path).st_mtime
        except OSError:
            return 0.0

    # -- writing

    def append(self, data: bytes) -> int:
        """Write *data* at the write position; return the position it was written at."""
        pos = self.wrote_position
        end = pos + len(data)
        self.mm[pos:end] = data
        self.wrote_position = end
        return pos

    def append_record(self, data: bytes, phys: int | None = None) -> int:
        """
        Like :meth:`append`, but the first four bytes (a record's TOTALSIZE) are written last,
        so a process killed in the middle leaves TOTALSIZE 0 and recovery stops right there.
        With *phys*, the record's PHYSICALOFFSET (bytes 28-35) is set on the way.
        """
        pos = self.wrote_position
        end = pos + len(data)
        mm = self.mm
        mm[pos + 4 : end] = memoryview(data)[4:]
        if phys is not None:
            _LONG.pack_into(mm, pos + 28, phys)
        mm[pos : pos + 4] = data[:4]
        self.wrote_position = end
        return pos

    def write_at(self, pos: int, data: bytes) -> None:
        self.mm[pos : pos + len(data)] = data

    def zero_from(self, pos: int) -> None:
        """
        Zero the file from *pos* on. Appends are sequential and every truncation zeroes, so
        stale bytes can only follow *pos* contiguously: the scan stops after 8 MiB of zeros
        (more than the largest record), instead of reading a whole 1 GiB file.
        """
        end = self.file_size
        zeros = 0
        while pos < end and zeros < (8 << 20):
            stop = min(end, pos + _ZERO_CHUNK)
            chunk = self.mm[pos:stop]
            if chunk.count(0) != len(chunk):
                self.mm[pos:stop] = bytes(stop - pos)
                zeros = 0
            else:
                zeros += stop - pos
            pos = stop

    # -- reading

    def read(self, pos: int, size: int) -> bytes | None:
        """Copy *size* bytes at *pos*, or ``None`` if the file was closed meanwhile."""
        try:
            return self.mm[pos : pos + size]
        except ValueError:
            return None

    # -- flushing

    def flush(self, least_pages: int) -> int:
        """
        Flush the written but unflushed range when at least *least_pages* pages are dirty
        (any amount when 0, or when the file is full). Java ``MappedFile.flush``.

        :return: the flushed position.
        """
        wrote = self.wrote_position
        flushed = self.flushed_position
        if wrote <= flushed or self._closed:
            return flushed
        if not self.is_full() and least_pages > 0:
            if wrote // OS_PAGE_SIZE - flushed // OS_PAGE_SIZE < least_pages:
                return flushed
        # fdatasync, not mmap.flush: CPython holds the GIL during msync, which would stall every
        # writer thread for the length of the disk write. On Linux fdatasync writes back the
        # pages dirtied through the mapping just the same.
        try:
            os.fdatasync(self.fd)
        except (ValueError, OSError) as e:
            if not self._closed:
                log.error("flush of %s failed: %s", self.path, e)
            return flushed
        self.flushed_position = wrote
        return wrote

    # -- lifecycle

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.mm.close()
        except BufferError:  # an exported view is still alive; the GC will unmap it
            log.warning("mapped file %s still has exported buffers", self.path)
        os.close(self.fd)

    def destroy(self) -> bool:
        """Close and delete the file (Java ``MappedFile.destroy``)."""
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        except OSError as e:
            log.error("cannot delete %s: %s", self.path, e)
            return False
        return True

    def __repr__(self) -> str:
        return f"<MappedFile {self.path} wrote={self.wrote_position} flushed={self.flushed_position}>"


class MappedFileQueue:
    """
    The files of one directory, in offset order (Java ``MappedFileQueue``).

    :ivar flushed_where: global offset up to which data is flushed.
    :ivar store_timestamp: store time of the last flushed message (for the checkpoint).
    """

    def __init__(self, store_path: str, mapped_file_size: int) -> None:
        self.store_path = store_path
        self.mapped_file_size = mapped_file_size
        self.files: list[MappedFile] = []
        self.flushed_where = 0
        self.store_timestamp = 0
        #: called with each new file before anything is written to it (the C group commit
        #: flusher registers it); an exception fails the creation
        self.on_create: Callable[[MappedFile], object] | None = None

    # -- loading

    def load(self) -> bool:
        """Map the existing files; ``False`` if one has the wrong size (as Java refuses)."""
        if not os.path.isdir(self.store_path):
            return True
        for n in os.listdir(self.store_path):
            if n.endswith(CREATING_SUFFIX):
                log.warning("removing %s, left over from a crash during its creation", n)
                os.unlink(os.path.join(self.store_path, n))
        names = sorted(n for n in os.listdir(self.store_path) if n.isdigit() and len(n) == 20)
        files: list[MappedFile] = []
        for name in names:
            path = os.path.join(self.store_path, name)
            size = os.path.getsize(path)
            if size != self.mapped_file_size:
                log.error("%s is %d bytes, expected %d; the store cannot load it", path, size,
                          self.mapped_file_size)
                for f in files:
                    f.close()
                return False
            f = MappedFile(path, self.mapped_file_size, create=False)
            f.wrote_position = f.flushed_position = size
            files.append(f)
        self.files = files
        return True

    # -- lookup

    def first(self) -> MappedFile | None:
        files = self.files
        return files[0] if files else None

    def last(self) -> MappedFile | None:
        files = self.files
        return files[-1] if files else None

    def get_last_mapped_file(self, start_offset: int = 0, need_create: bool = True) -> MappedFile | None:
        """
        The file to append to; with *need_create*, a new one after a full last file (or the
        first one, at the file holding *start_offset*). Raises ``OSError`` if creation fails.
        """
        last = self.last()
        if last is not None and not last.is_full():
            return last
        if not need_create:
            return last
        if last is None:
            create_offset = start_offset - start_offset % self.mapped_file_size
        else:
            create_offset = last.file_tail_offset
        return self._create(create_offset, first_in_queue=last is None)

    def _create(self, offset: int, first_in_queue: bool = False) -> MappedFile:
        os.makedirs(self.store_path, exist_ok=True)
        f = MappedFile(os.path.join(self.store_path, file_name(offset)), self.mapped_file_size)
        f.first_create_in_queue = first_in_queue
        if self.on_create is not None:
            try:
                self.on_create(f)
            except Exception as e:
                f.destroy()
                raise OSError(f"cannot register {f.path} for flushing: {e}") from e
        self.files = self.files + [f]
        return f

    def find_mapped_file_by_offset(self, offset: int, return_first_on_not_found: bool = False) -> MappedFile | None:
        files = self.files
        if not files:
            return None
        first = files[0]
        index = (offset - first.file_from_offset) // self.mapped_file_size
        if 0 <= index < len(files):
            f = files[index]
            if f.file_from_offset <= offset < f.file_tail_offset:
                return f
        for f in files:  # gaps (should not happen) or an out-of-date index
            if f.file_from_offset <= offset < f.file_tail_offset:
                return f
        return first if return_first_on_not_found else None

    def get_min_offset(self) -> int:
        f = self.first()
        return f.file_from_offset if f is not None else 0

    def get_max_offset(self) -> int:
        f = self.last()
        return f.file_from_offset + f.wrote_position if f is not None else 0

    def how_much_fall_behind(self) -> int:
        return max(0, self.get_max_offset() - self.flushed_where)

    # -- flushing

    def flush(self, least_pages: int) -> bool:
        """
        Flush from :attr:`flushed_where` on (Java ``MappedFileQueue.flush``), crossing into
        following files when the current one is complete.

        :return: ``True`` if nothing had to be flushed.
        """
        start = self.flushed_where
        while True:
            f = self.find_mapped_file_by_offset(self.flushed_where, self.flushed_where == 0)
            if f is None:
                break
            ts = f.store_timestamp
            where = f.file_from_offset + f.flush(least_pages)
            if where <= self.flushed_where and not (f.is_full() and where == f.file_tail_offset):
                break
            moved = where > self.flushed_where
            self.flushed_where = where
            if ts:
                self.store_timestamp = ts
            if not (f.is_full() and f.flushed_position >= f.file_size) or not moved:
                break
        return self.flushed_where == start

    def mark_flushed(self, offset: int) -> None:
        """Record that a sync done elsewhere (the C group commit flusher) covered *offset*."""
        if offset <= self.flushed_where:
            return
        for f in reversed(self.files):
            if f.file_from_offset >= offset:
                continue
            if f.flushed_position >= f.file_size:
                break
            pos = min(offset - f.file_from_offset, f.file_size)
            if pos > f.flushed_position:
                f.flushed_position = pos
        self.flushed_where = offset

    # -- truncation and deletion

    def truncate_dirty_files(self, offset: int) -> None:
        """
        Drop everything at and after *offset* (Java ``truncateDirtyFiles``): later files are
        deleted, and the file holding *offset* is zeroed from there, so stale records past the
        new end can never be mistaken for valid ones by a later recovery.
        """
        keep = []
        for f in self.files:
            if f.file_tail_offset > offset:
                if offset >= f.file_from_offset:
                    pos = offset % self.mapped_file_size
                    f.zero_from(pos)
                    f.wrote_position = f.flushed_position = pos
                    keep.append(f)
                else:
                    f.destroy()
            else:
                keep.append(f)
        self.files = keep
        self.flushed_where = min(self.flushed_where, offset) if self.flushed_where else offset

    def delete_last_mapped_file(self) -> None:
        files = self.files
        if files:
            files[-1].destroy()
            self.files = files[:-1]

    def delete_files(self, doomed: list[MappedFile]) -> int:
        ids = {id(f) for f in doomed}
        self.files = [f for f in self.files if id(f) not in ids]
        n = 0
        for f in doomed:
            n += f.destroy()
        return n

    def delete_expired_file_by_time(self, expired_seconds: float, now: float, clean_immediately: bool,
                                    max_delete: int = 10) -> int:
        """
        Delete files (never the last one) last modified more than *expired_seconds* ago, or any
        when *clean_immediately* (Java ``deleteExpiredFileByTime``). At most *max_delete* per call.
        """
        files = self.files[:-1]
        doomed = []
        for f in files:
            if now >= f.last_modified() + expired_seconds or clean_immediately:
                doomed.append(f)
                if len(doomed) >= max_delete:
                    break
            else:
                break
        return self.delete_files(doomed)

    def delete_expired_file_by_offset(self, offset: int, unit_size: int,
                                      max_phy_of: Callable[[MappedFile], int | None]) -> int:
        """
        Delete ConsumeQueue files (never the last) whose last entry points below *offset*
        (Java ``deleteExpiredFileByOffset``). *max_phy_of* returns that entry's CommitLog offset.
        """
        doomed = []
        for f in self.files[:-1]:
            max_phy = max_phy_of(f)
            if max_phy is not None and max_phy < offset:
                doomed.append(f)
            else:
                break
        return self.delete_files(doomed)

    def close(self) -> None:
        for f in self.files:
            f.close()

    def destroy(self) -> None:
        for f in self.files:
            f.destroy()
        self.files = []
        self.flushed_where = 0
