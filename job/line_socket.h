// defines: triax::send_line, triax::receive_lines, triax::ipv4_addresses, triax::listen_any,
//          triax::connect_to
//
// TCP for a protocol of text lines (job/heartbeat.h's), in POSIX sockets: non-blocking sends
// that cannot raise SIGPIPE, line reassembly, this host's addresses, a listener on any free port
// and a connect that retries until a deadline.
#pragma once

#include <string>
#include <vector>

namespace triax {

/// Sends LINE and a newline without blocking; a vanished peer is not an error here (the
/// protocol notices silence), and cannot raise SIGPIPE.
void send_line(int fd, const std::string& line);

/// Reads what is there without blocking, appends whole lines to `lines` (a partial one waits in
/// `buffer`); false when the peer closed the connection (or it broke). The lines read come out
/// even when the connection then closed (a goodbye and the close arrive together).
bool receive_lines(int fd, std::string& buffer, std::vector<std::string>* lines);

/// This host's IPv4 addresses other than loopback.
std::vector<std::string> ipv4_addresses();

/// A listening socket on a free port of every address; sets `*port`. Throws Error.
int listen_any(int* port);

/// A connection to address:port within `seconds` (retried every 0.2 s), or -1.
int connect_to(const std::string& address, int port, double seconds);

}  // namespace triax
