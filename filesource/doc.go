// Package filesource is the runner's side of fileio.Watch
// (beam:transform:weir:file_watch:v1): a source that follows a folder and
// reads each new file once, the on-prem stand-in for a bucket's
// notifications. It is a connector (Connector), listed in
// connector/all.
//
// One subtask (Source) lists the folder every poll interval (polling, not
// inotify: it is what works on network mounts, and a listing is what a
// restore compares with its checkpoint). A Tracker, pure and driven by
// the caller's clock, decides from each listing which files are ready (at
// first sight when writers rename files into place, else once their size
// and modification time are the same at two polls), gives each its event
// time (its modification time, or a time in its name), remembers the
// files read, and keeps the watermark: the newest time minus a bounded
// out-of-orderness, per first-level subfolder with idleness if asked
// (watermarkmgr.Splits, as the Kafka source's partitions), held back by
// files still being written.
//
// The caller's loop (Source.Run): poll the barriers; list the folder;
// Tracker.Observe; read and emit each ready file in event-time order,
// Tracker.Take as it goes (a file in lines mode Batch lines at a time,
// barriers between); send Tracker.Watermark; wait the poll interval,
// polling barriers. Each snapshot holds the files read (bounded by the
// retention), the file being read and its offset, and the watermark, so a
// restore neither reads a file again nor skips one. A bounded watch
// (max_files, stop_after, stop_after_idle) and a drained job end with the
// watermark at +inf.
//
// The folder is opened as an os.Root at every poll, so a symbolic link
// in it cannot lead a confined server (--allowed-dirs, checked through
// Connector.Paths) outside its folders.
package filesource
