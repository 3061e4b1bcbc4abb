// libmicrohttpd for YOLOServe. Swift cannot call C variadic functions, so the few that MHD
// offers only in variadic form (starting the daemon with options, connection and daemon
// queries) are wrapped here with fixed arguments; and a peer's address as a short key.
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <microhttpd.h>

/// MHD_OPTION_URI_LOG_CALLBACK's callback: its result becomes the request's `*req_cls`.
typedef void *(*yolo_uri_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

/// A line libmicrohttpd logs (an error it met: a request it could not parse, a connection it
/// refused at its limit), formatted, without its newline.
typedef void (*yolo_log_callback)(void *cls, const char *line);

/// Where libmicrohttpd's log goes: the callback and its `cls`, for the daemon's lifetime.
typedef struct { yolo_log_callback log; void *cls; } yolo_mhd_log_sink;

static inline void yolo_mhd_logger(void *cls, const char *format, va_list arguments) {
    const yolo_mhd_log_sink *sink = (const yolo_mhd_log_sink *)cls;
    char line[512];
    vsnprintf(line, sizeof line, format, arguments);
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    if (sink && sink->log) sink->log(sink->cls, line);
}

/// Limits and callbacks of one daemon, passed to yolo_mhd_start.
typedef struct {
    unsigned int flags;                        // MHD_USE_* / MHD_ALLOW_*
    const struct sockaddr *address;            // where to listen (sockaddr_in or sockaddr_in6)
    MHD_AccessHandlerCallback handler;
    MHD_RequestCompletedCallback completed;
    MHD_NotifyConnectionCallback notify;
    MHD_AcceptPolicyCallback accept_policy;    // may refuse a peer before its connection exists
    yolo_uri_callback uri_log;                  // MHD_OPTION_URI_LOG_CALLBACK: the URI before it is parsed
    void *context;                             // given to all the callbacks
    unsigned int connection_limit;             // MHD_OPTION_CONNECTION_LIMIT
    unsigned int per_ip_limit;                 // MHD_OPTION_PER_IP_CONNECTION_LIMIT (0: none)
    unsigned int idle_timeout;                 // MHD_OPTION_CONNECTION_TIMEOUT, seconds
    size_t connection_memory;                  // MHD_OPTION_CONNECTION_MEMORY_LIMIT, bytes
    unsigned int listen_backlog;               // MHD_OPTION_LISTEN_BACKLOG_SIZE
    const yolo_mhd_log_sink *log_sink;         // MHD_OPTION_EXTERNAL_LOGGER's (with MHD_USE_ERROR_LOG); must outlive the daemon
} yolo_mhd_config;

/// Starts a daemon as `config` says; NULL on failure (errno may say why, e.g. EADDRINUSE).
static inline struct MHD_Daemon *yolo_mhd_start(const yolo_mhd_config *config) {
    return MHD_start_daemon(config->flags, 0, config->accept_policy, config->context, config->handler, config->context,
                            MHD_OPTION_SOCK_ADDR, config->address,
                            MHD_OPTION_URI_LOG_CALLBACK, config->uri_log, config->context,
                            MHD_OPTION_NOTIFY_COMPLETED, config->completed, config->context,
                            MHD_OPTION_NOTIFY_CONNECTION, config->notify, config->context,
                            MHD_OPTION_CONNECTION_LIMIT, config->connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, config->per_ip_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, config->idle_timeout,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, config->connection_memory,
                            MHD_OPTION_LISTEN_BACKLOG_SIZE, config->listen_backlog,
                            MHD_OPTION_EXTERNAL_LOGGER, yolo_mhd_logger, (void *)config->log_sink,
                            MHD_OPTION_END);
}

/// The port the daemon listens on (useful after asking for port 0); 0 when unknown.
static inline uint16_t yolo_mhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/// The connection's socket, or -1.
static inline int yolo_mhd_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/// A peer's address as a key (`out`: 16 bytes, IPv4 and IPv4-mapped IPv6 as ::ffff:a.b.c.d) and
/// whether it is a loopback address (127.0.0.0/8, ::1): 1 loopback, 0 not, -1 not an IP address.
static inline int yolo_peer_key(const struct sockaddr *address, uint8_t out[16]) {
    memset(out, 0, 16);
    if (address == NULL) return -1;
    if (address->sa_family == AF_INET) {
        const uint8_t *v4 = (const uint8_t *)&((const struct sockaddr_in *)address)->sin_addr;
        out[10] = 0xff; out[11] = 0xff;
        memcpy(out + 12, v4, 4);
        return v4[0] == 127;
    }
    if (address->sa_family == AF_INET6) {
        const uint8_t *v6 = (const uint8_t *)&((const struct sockaddr_in6 *)address)->sin6_addr;
        memcpy(out, v6, 16);
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        static const uint8_t loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        if (memcmp(v6, mapped, 12) == 0) return v6[12] == 127;
        return memcmp(v6, loopback, 16) == 0;
    }
    return -1;
}

/// The connection's peer as yolo_peer_key gives it.
static inline int yolo_mhd_peer_key(struct MHD_Connection *connection, uint8_t out[16]) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return yolo_peer_key(info ? info->client_addr : NULL, out);
}

/// Bytes that have arrived on a socket and are not yet read (FIONREAD); 0 when unknown.
static inline int yolo_socket_unread(int fd) {
    int n = 0;
    return (fd >= 0 && ioctl(fd, FIONREAD, &n) == 0 && n > 0) ? n : 0;
}
