package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// NewClient returns a client of the Redis that rawURL names: of that one server,
// or of the whole Redis Cluster when the server says it is a node of one (INFO cluster:
// cluster_enabled:1). More seeds of a cluster may follow in go-redis's cluster form,
// redis://host1:port1?addr=host2:port2&addr=host3:port3; on a single server the addr
// parameters are ignored. tune adjusts the options of the single server's client, and
// of every node's client of a cluster (timeouts, pool), before it is made.
//
// The first server named must answer: it is asked whether it is a cluster node. A
// server that does not know the INFO section (the embedded one) is not. It returns
// the parse error of a malformed URL, or the error of that first question.
func NewClient(ctx context.Context, rawURL string, tune func(*redis.Options)) (redis.UniversalClient, error) {
	opts, copts, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	tune(opts)
	client := redis.NewClient(opts)
	info, err := client.Info(ctx, "cluster").Result()
	if err != nil {
		var reply redis.Error
		if !errors.As(err, &reply) {
			_ = client.Close()
			return nil, fmt.Errorf("ask whether it is a cluster node: %w", err)
		}
		info = "" // a server without the cluster section is a single server
	}
	if !strings.Contains(info, "cluster_enabled:1") {
		return client, nil
	}
	_ = client.Close()
	if opts.DB != 0 {
		return nil, fmt.Errorf("a Redis Cluster has only database 0, not %d", opts.DB)
	}
	// Every node's client gets the same tuning as a single server's. The cluster
	// client itself follows MOVED and ASK redirections (resharding) up to
	// MaxRedirects times, retrying a failed node the same number of times.
	copts.NewClient = func(o *redis.Options) *redis.Client {
		tune(o)
		return redis.NewClient(o)
	}
	copts.MinRetryBackoff, copts.MaxRetryBackoff = opts.MinRetryBackoff, opts.MaxRetryBackoff
	return redis.NewClusterClient(copts), nil
}

// ParseURL reads rawURL both as one server's URL (without its addr parameters) and
// as a cluster's (its host and every addr parameter are seeds), and fails when either
// reading does.
func ParseURL(rawURL string) (*redis.Options, *redis.ClusterOptions, error) {
	single, err := withoutAddrParams(rawURL)
	if err != nil {
		return nil, nil, err
	}
	opts, err := redis.ParseURL(single)
	if err != nil {
		return nil, nil, err
	}
	copts, err := redis.ParseClusterURL(rawURL)
	if err != nil {
		return nil, nil, err
	}
	return opts, copts, nil
}

// withoutAddrParams returns rawURL without its addr query parameters (more seeds of a
// cluster), which redis.ParseURL would refuse.
func withoutAddrParams(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	if !q.Has("addr") {
		return rawURL, nil
	}
	q.Del("addr")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// NewFailoverClient returns a client of the master that the Redis Sentinels at
// sentinels (host:port each) know as master: go-redis's failover client, which asks
// the sentinels for the master's address, follows a failover to the promoted replica,
// and is a *redis.Client, so a pipeline holds one connection to the master. rawURL,
// when not empty, gives the username, password, database and TLS of the master (its
// host is not used); tune adjusts the options as NewClient's, timeouts and pool
// included. It connects to nothing yet. It returns the parse error of a malformed URL.
func NewFailoverClient(rawURL, master string, sentinels []string, tune func(*redis.Options)) (*redis.Client, error) {
	opts := &redis.Options{}
	if rawURL != "" {
		var err error
		if opts, err = redis.ParseURL(rawURL); err != nil {
			return nil, err
		}
	}
	tune(opts)
	return redis.NewFailoverClient(failoverOptions(opts, master, sentinels)), nil
}

// failoverOptions are o's settings for the failover client of master, found through
// sentinels: every one a URL or a tune function sets.
func failoverOptions(o *redis.Options, master string, sentinels []string) *redis.FailoverOptions {
	return &redis.FailoverOptions{
		MasterName:    master,
		SentinelAddrs: sentinels,

		ClientName: o.ClientName,
		Protocol:   o.Protocol,
		Username:   o.Username,
		Password:   o.Password,
		DB:         o.DB,
		TLSConfig:  o.TLSConfig,

		MaxRetries:      o.MaxRetries,
		MinRetryBackoff: o.MinRetryBackoff,
		MaxRetryBackoff: o.MaxRetryBackoff,

		DialTimeout:           o.DialTimeout,
		DialerRetries:         o.DialerRetries,
		DialerRetryTimeout:    o.DialerRetryTimeout,
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled,

		PoolFIFO:         o.PoolFIFO,
		PoolSize:         o.PoolSize,
		PipelinePoolSize: o.PipelinePoolSize,
		PoolTimeout:      o.PoolTimeout,
		MinIdleConns:     o.MinIdleConns,
		MaxIdleConns:     o.MaxIdleConns,
		MaxActiveConns:   o.MaxActiveConns,
		ConnMaxIdleTime:  o.ConnMaxIdleTime,
		ConnMaxLifetime:  o.ConnMaxLifetime,
	}
}
