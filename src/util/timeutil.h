/*
 * timeutil: clocks. Wall time for event timestamps, monotonic time for durations and timeouts.
 */
#ifndef FAULTLINE_UTIL_TIMEUTIL_H
#define FAULTLINE_UTIL_TIMEUTIL_H

#include <stdint.h>

/* Milliseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t time_now_ms(void);
/* Microseconds since the Unix epoch (CLOCK_REALTIME): event timestamps (docs/events.md). */
int64_t time_now_us(void);
/* Nanoseconds on CLOCK_MONOTONIC. */
int64_t time_mono_ns(void);
/* Sleeps ms milliseconds, resuming after signals. */
void time_sleep_ms(int64_t ms);

#endif
