// libmicrohttpd for YOLOServe. Swift cannot call C variadic functions, so the few that MHD
// offers only in variadic form (starting the daemon with options, connection and daemon
// queries) are wrapped here with fixed arguments.
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

/// Limits and callbacks of one daemon, passed to yolo_mhd_start.
typedef struct {
    unsigned int flags;                        // MHD_USE_* / MHD_ALLOW_*
    const struct sockaddr *address;            // where to listen (sockaddr_in or sockaddr_in6)
    MHD_AccessHandlerCallback handler;
    MHD_RequestCompletedCallback completed;
    MHD_NotifyConnectionCallback notify;
    void *context;                             // given to all three callbacks
    unsigned int connection_limit;             // MHD_OPTION_CONNECTION_LIMIT
    unsigned int per_ip_limit;                 // MHD_OPTION_PER_IP_CONNECTION_LIMIT (0: none)
    unsigned int idle_timeout;                 // MHD_OPTION_CONNECTION_TIMEOUT, seconds
    size_t connection_memory;                  // MHD_OPTION_CONNECTION_MEMORY_LIMIT, bytes
    unsigned int listen_backlog;               // MHD_OPTION_LISTEN_BACKLOG_SIZE
} yolo_mhd_config;

/// Starts a daemon as `config` says; NULL on failure (errno may say why, e.g. EADDRINUSE).
static inline struct MHD_Daemon *yolo_mhd_start(const yolo_mhd_config *config) {
    return MHD_start_daemon(config->flags, 0, NULL, NULL, config->handler, config->context,
                            MHD_OPTION_SOCK_ADDR, config->address,
                            MHD_OPTION_NOTIFY_COMPLETED, config->completed, config->context,
                            MHD_OPTION_NOTIFY_CONNECTION, config->notify, config->context,
                            MHD_OPTION_CONNECTION_LIMIT, config->connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, config->per_ip_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, config->idle_timeout,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, config->connection_memory,
                            MHD_OPTION_LISTEN_BACKLOG_SIZE, config->listen_backlog,
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
