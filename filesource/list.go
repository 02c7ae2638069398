package filesource

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
)

// Entry is one file of a listing.
type Entry struct {
	// Path is the file's path below the watched folder, slash-separated.
	Path string
	Size int64
	Mod  time.Time
}

// hidden reports whether a name is never read: files being written under
// a hidden name (weir's file sink writes ".part-...tmp"), markers such as
// Hadoop's _SUCCESS, and hidden folders. Hadoop's FileInputFormat skips
// the same names.
func hidden(name string) bool { return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") }

// list returns the regular files of fsys whose base name matches pattern,
// below its root and, if recursive, below every folder that is not
// hidden. A file that vanishes while it is listed is left out. Symbolic
// links to files are followed; links to folders are not (a loop would
// never end).
func list(fsys fs.FS, pattern string, recursive bool) ([]Entry, error) {
	var out []Entry
	var walk func(dir string) error
	walk = func(dir string) error {
		des, err := fs.ReadDir(fsys, dir)
		if err != nil {
			if dir != "." && errors.Is(err, fs.ErrNotExist) {
				return nil // a subfolder removed while listed
			}
			return err
		}
		for _, de := range des {
			name := de.Name()
			if hidden(name) {
				continue
			}
			p := path.Join(dir, name)
			if de.IsDir() {
				if recursive {
					if err := walk(p); err != nil {
						return err
					}
				}
				continue
			}
			if ok, _ := path.Match(pattern, name); !ok {
				continue
			}
			info, err := fs.Stat(fsys, p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("stat %s: %w", p, err)
			}
			if !info.Mode().IsRegular() {
				continue
			}
			out = append(out, Entry{Path: p, Size: info.Size(), Mod: info.ModTime()})
		}
		return nil
	}
	return out, walk(".")
}

// Folder opens the watched folder for one poll or one file's read; close
// releases it. An error that the folder is missing is retried.
type Folder func() (fsys fs.FS, close func(), err error)

// OSFolder is the folder dir of the operating system's file system,
// opened as an os.Root: a symbolic link inside it that leads outside is
// refused, so a server confined to some folders (--allowed-dirs) reads
// nothing outside them through a link. It is opened again at every poll,
// so a folder removed and made again is followed.
func OSFolder(dir string) Folder {
	return func() (fs.FS, func(), error) {
		r, err := os.OpenRoot(dir)
		if err != nil {
			return nil, nil, err
		}
		return r.FS(), func() { r.Close() }, nil
	}
}
