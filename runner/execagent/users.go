package execagent

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// account is a user resolved from the container's /etc/passwd and /etc/group.
type account struct {
	name   string
	uid    uint32
	gid    uint32
	groups []uint32 // supplementary groups, the primary one included
	home   string
}

// errUnknownUser is wrapped when a user is neither in /etc/passwd nor a uid.
var errUnknownUser = fmt.Errorf("unknown user")

// lookupUser resolves name (a user name or a numeric uid) from etcDir's
// passwd and group files. A numeric uid absent from passwd is accepted with
// the same gid and home "/" (as container runtimes do).
func lookupUser(etcDir, name string) (*account, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty name", errUnknownUser)
	}
	passwd := filepath.Join(etcDir, "passwd")
	var acct *account
	err := eachLine(passwd, func(f []string) bool {
		if len(f) < 7 {
			return true
		}
		if f[0] != name && f[2] != name {
			return true
		}
		uid, err1 := strconv.ParseUint(f[2], 10, 32)
		gid, err2 := strconv.ParseUint(f[3], 10, 32)
		if err1 != nil || err2 != nil {
			return true
		}
		acct = &account{name: f[0], uid: uint32(uid), gid: uint32(gid), home: f[5]}
		return f[0] != name // a name match wins over a uid match; keep looking
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read %s: %w", passwd, err)
	}
	if acct == nil {
		uid, perr := strconv.ParseUint(name, 10, 32)
		if perr != nil {
			return nil, fmt.Errorf("%w %q: not in %s", errUnknownUser, name, passwd)
		}
		acct = &account{uid: uint32(uid), gid: uint32(uid), home: "/"}
	}
	if acct.home == "" {
		acct.home = "/"
	}
	acct.groups = []uint32{acct.gid}
	if acct.name == "" {
		return acct, nil
	}
	group := filepath.Join(etcDir, "group")
	err = eachLine(group, func(f []string) bool {
		if len(f) < 4 {
			return true
		}
		for _, m := range strings.Split(f[3], ",") {
			if m == acct.name {
				if gid, err := strconv.ParseUint(f[2], 10, 32); err == nil && uint32(gid) != acct.gid {
					acct.groups = append(acct.groups, uint32(gid))
				}
				break
			}
		}
		return true
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read %s: %w", group, err)
	}
	return acct, nil
}

// eachLine calls fn with the colon-separated fields of each line of path
// until fn returns false.
func eachLine(path string, fn func([]string) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !fn(strings.Split(line, ":")) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return nil
}
