package apisim

import (
	"context"
	"time"

	"github.com/go-dsync/dsync/dsync/driver"
)

// A process's view of the store's sessions, through its faulty network
// (procStore.request).

// InsertSession implements driver.Store.
func (s *procStore) InsertSession(ctx context.Context, sess driver.Session) error {
	return s.insertSession(ctx, sess, false)
}

// insertSession inserts sess's document, marked as a writer's of the
// record of up-time if marked (InsertSessionUp).
func (s *procStore) insertSession(ctx context.Context, sess driver.Session, marked bool) error {
	var err error
	rerr := s.request(ctx, "insert-session", func(plan) {
		err = s.p.w.sess.insert(sess, marked)
		s.p.w.tracef("%s insert-session %s gen %d exp %s marked %v: %v", s.name(), sess.ID, sess.Gen, sess.ExpiresAt.Format(tf), marked, err)
		if err == nil {
			s.p.w.opened(sess)
		}
	}, func(sent time.Time) {
		if err == nil {
			s.p.w.confirmed(s.p, sess.ID, sent, sess.ExpiresAt)
		}
	})
	if rerr != nil {
		return rerr
	}
	return err
}

// RenewSession implements driver.Store: torn, its read of the document
// and its raise of the expiry are apart (an emptying between them leaves
// the session gone, though the reply says found).
func (s *procStore) RenewSession(ctx context.Context, id string, gen int, expires time.Time) (bool, error) {
	var found bool
	err := s.request(ctx, "renew-session", func(pl plan) {
		s.p.w.tracef("%s renew-session %s gen %d exp %s torn %v", s.name(), id, gen, expires.Format(tf), pl.torn)
		if !pl.torn {
			found = s.p.w.sess.renew(id, gen, expires)
			return
		}
		if found = s.p.w.sess.has(id, gen); found {
			time.Sleep(s.p.w.tearGap())
			s.p.w.sess.renew(id, gen, expires)
		}
	}, func(sent time.Time) {
		s.p.w.tracef("%s renew-session reply %s sent %s found %v", s.name(), id, sent.Format(tf), found)
		if found {
			s.p.w.confirmed(s.p, id, sent, expires)
		}
	})
	if err != nil {
		return false, err
	}
	return found, nil
}

// GetSession implements driver.Store.
func (s *procStore) GetSession(ctx context.Context, id string) (driver.Session, bool, error) {
	var sess driver.Session
	var found bool
	if err := s.request(ctx, "get-session", func(plan) {
		sess, found = s.p.w.sess.get(id)
		s.p.w.tracef("%s get-session %s: %v gen %d exp %s first %v", s.name(), id, found, sess.Gen, sess.ExpiresAt.Format(tf), sess.HasFirst)
	}, nil); err != nil {
		return driver.Session{}, false, err
	}
	return sess, found, nil
}
