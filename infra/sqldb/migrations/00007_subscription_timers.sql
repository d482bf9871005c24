-- +goose Up
-- Read model of the durable cancel-at-period-end timers (projections/subscription_timers.go),
-- rebuilt from the log: one row per subscription that is set to cancel when its current period
-- ends, until SubscriptionCancelled or SubscriptionCompleted removes it. due_at is that period
-- end (milliseconds); the timer worker reads the soonest first.
CREATE TABLE subscription_timers (
    id         TEXT   NOT NULL PRIMARY KEY, -- the subscription id
    account_id TEXT   NOT NULL,
    due_at     BIGINT NOT NULL
);
CREATE INDEX subscription_timers_by_due ON subscription_timers (due_at);

-- +goose Down
DROP TABLE subscription_timers;
