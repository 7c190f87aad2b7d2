// Package domain holds seckill's vocabulary: vouchers on sale, the reservations a
// grab makes, the orders they become, and the errors that name every way a request
// can be refused. It depends on the standard library only.
package domain
