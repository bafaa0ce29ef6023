package api

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// peerClosed reports whether the peer of the connection closed it or it failed, without
// reading from it (POLLRDHUP: the peer shut its side down).
func peerClosed(raw syscall.RawConn) bool {
	closed := false
	err := raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		n, err := unix.Poll(fds, 0)
		closed = err == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
	})
	return err == nil && closed
}
