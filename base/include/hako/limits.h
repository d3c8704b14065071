/* The limits every hako library agrees on. A name (of a domain, an asset, a robot, a PDU, a
 * node, an id in a bridge or RD file) has at most HAKO_NAME_MAX - 1 bytes everywhere: in the
 * files, in the domain segment and in the API, so that a name one layer accepts is never refused
 * by the next. It lives in base because registry (pdudef names) and core (segment names) both
 * need it and neither may include the other's headers. */
#ifndef HAKO_LIMITS_H
#define HAKO_LIMITS_H

#define HAKO_NAME_MAX 128 /* bytes with the NUL: a name has 1 to 127 */

#endif
